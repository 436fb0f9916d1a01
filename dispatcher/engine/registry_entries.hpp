#pragma once
// The registry's entries as the engine uses them: each one's secrets opened
// with the dispatcher's keys and the whole entry checked by the environment's
// parser (dispatcher/config/destination_check.cpp). An entry that is disabled,
// invalid (written by hand) or whose secret does not open is unusable, with
// the reason on-call reads: its rows wait, they do not die.
#include <map>
#include <string>
#include <vector>

#include "db/destination_registry_store.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"

namespace outbox {

// The dispatcher's sealing keys, read once at start-up.
struct registry_keys {
  secrets::sealing_keyring keys;
  std::string problem;  // why they could not be read (a bad OUTBOX_SEALING_KEY_FILE); empty when they were
};

// Reads OUTBOX_SEALING_KEY_FILE and OUTBOX_SEALING_KEY_FILE_PREVIOUS; never throws.
[[nodiscard]] registry_keys load_registry_keys(const config& cfg);

// A problem with the keys is named in the reason of every entry with a secret.
[[nodiscard]] std::vector<registry_destination> interpret_registry(const std::vector<db::registry_entry>& entries,
                                                                   const registry_keys& keys);

// interpret_registry for a running engine: an entry unchanged since the last read
// keeps its interpretation, so a reload opens only the secrets that changed (one
// X25519 agreement each: a thousand destinations cost 80 ms a reload before).
class registry_interpreter {
 public:
  explicit registry_interpreter(const registry_keys& keys) : keys_(keys) {}
  [[nodiscard]] std::vector<registry_destination> interpret(const std::vector<db::registry_entry>& entries);
  // The entries of these "provider/name" keys only (those `found`; the others were removed).
  [[nodiscard]] std::vector<registry_destination> interpret_entries(const std::vector<std::string>& keys,
                                                                    const std::vector<db::registry_entry>& found);
  // Why the key files could not be read; empty when they were.
  [[nodiscard]] const std::string& key_problem() const { return keys_.problem; }

 private:
  struct remembered {
    db::registry_entry entry;
    registry_destination result;
  };
  using remembered_map = std::map<std::string, remembered, std::less<>>;  // by "provider/name"
  [[nodiscard]] std::vector<registry_destination> interpret_reusing(const std::vector<db::registry_entry>& entries,
                                                                    remembered_map& from, remembered_map& into);

  const registry_keys& keys_;
  remembered_map last_;
};

}  // namespace outbox

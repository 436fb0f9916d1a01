#pragma once
// The dispatcher's sealing keys (OUTBOX_SEALING_KEY_FILE and, during a
// rotation, OUTBOX_SEALING_KEY_FILE_PREVIOUS): new secrets are sealed for the
// current key; a value sealed for either key opens. `dispatcher keys reseal`
// moves every stored secret to the current key, after which the previous file
// can go.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/secrets/sealed_secret.hpp"

namespace outbox::secrets {

class sealing_keyring {
 public:
  sealing_keyring() = default;
  // The first key is the current one.
  explicit sealing_keyring(std::vector<sealing_key> keys) : keys_(std::move(keys)) {}

  [[nodiscard]] bool empty() const noexcept { return keys_.empty(); }
  // nullptr when there is no key.
  [[nodiscard]] const sealing_key* current() const noexcept { return keys_.empty() ? nullptr : &keys_.front(); }
  [[nodiscard]] const sealing_key* find(std::string_view id) const;
  // Opens with whichever key the value names; the problem names the key ids held when none is.
  [[nodiscard]] sealing_key::opened open(std::string_view sealed, std::string_view context) const;
  [[nodiscard]] const std::vector<sealing_key>& keys() const noexcept { return keys_; }

 private:
  std::vector<sealing_key> keys_;
};

// Reads the private keys from PEM files (current first; an empty path is
// skipped). Throws std::runtime_error naming the file that is missing, not
// readable, or not an X25519 private key.
[[nodiscard]] sealing_keyring load_keyring(const std::vector<std::filesystem::path>& files);

// The context a destination's secret is sealed under: "provider/name/key".
[[nodiscard]] std::string secret_context(std::string_view provider, std::string_view name, std::string_view key);

}  // namespace outbox::secrets

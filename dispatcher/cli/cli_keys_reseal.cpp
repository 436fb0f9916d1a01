// `dispatcher keys reseal`: the last step of a key rotation. Every registry
// secret sealed for another key is opened with the dispatcher's key files
// (OUTBOX_SEALING_KEY_FILE, OUTBOX_SEALING_KEY_FILE_PREVIOUS) and sealed again
// for the current one, each entry in its own locked read-change-write, so a
// `destination set` running at the same time loses nothing.
#include <algorithm>
#include <iostream>

#include "db/destination_registry_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_keys.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"

namespace outbox::cli {
namespace {

struct reseal_tally {
  int resealed = 0;  // secrets
  int current = 0;   // secrets already sealed for the current key
  int entries = 0;   // entries changed
  std::vector<std::string> problems;
};

// The entry with each secret sealed for `to`; problems name the key, never a value.
db::registry_entry resealed(db::registry_entry e, const secrets::sealing_keyring& ring, reseal_tally& tally) {
  const auto& to = *ring.current();
  for (auto& [key, sealed] : e.secrets) {
    if (secrets::sealed_key_id(sealed) == to.id()) {
      ++tally.current;
      continue;
    }
    const auto context = secrets::secret_context(e.provider, e.name, key);
    auto opened = ring.open(sealed, context);
    if (!opened.value) {
      tally.problems.push_back(e.provider + "/" + e.name + " " + key + ": " + opened.problem);
      continue;
    }
    sealed = to.seal(*opened.value, context);
    ++tally.resealed;
  }
  return e;
}

boost::asio::awaitable<int> async_reseal(db::connection& conn, const secrets::sealing_keyring& ring, bool dry_run) {
  const auto published = co_await db::async_sealing_keys(conn);
  const auto current = std::find_if(published.begin(), published.end(), [](const auto& k) { return k.is_current; });
  if (current == published.end() || current->key_id != ring.current()->id()) {
    std::cerr << "dispatcher keys reseal: OUTBOX_SEALING_KEY_FILE holds key " << ring.current()->id()
              << ", but the current published key is "
              << (current == published.end() ? std::string("none") : current->key_id)
              << ": run `dispatcher keys publish` first, so new secrets are sealed for the same key\n";
    co_return exit_usage;
  }
  reseal_tally tally;
  for (const auto& listed : co_await db::async_list_registry(conn)) {
    reseal_tally entry;
    // The entry is read again under its lock: what is sealed is what is there now.
    auto change = [&](const std::optional<db::registry_entry>& e) -> std::optional<db::registry_entry> {
      entry = {};
      if (!e) return std::nullopt;
      auto next = resealed(*e, ring, entry);
      if (entry.resealed == 0 || dry_run) return std::nullopt;
      return next;
    };
    (void)co_await db::async_change_registry_entry(conn, listed.provider, listed.name, change,
                                                   "dispatcher keys reseal");
    tally.resealed += entry.resealed;
    tally.current += entry.current;
    tally.entries += entry.resealed > 0 ? 1 : 0;
    tally.problems.insert(tally.problems.end(), entry.problems.begin(), entry.problems.end());
  }
  std::cout << (dry_run ? "would reseal " : "resealed ") << tally.resealed << " secret(s) in " << tally.entries
            << " destination(s) for key " << ring.current()->id() << "; " << tally.current
            << " already sealed for it\n";
  for (const auto& p : tally.problems) std::cerr << "dispatcher keys reseal: " << terminal_text(p) << "\n";
  if (!tally.problems.empty()) {
    std::cerr << "dispatcher keys reseal: " << tally.problems.size()
              << " secret(s) left as they are: set them again with `dispatcher destination set ... --secret`\n";
    co_return exit_failure;
  }
  co_return exit_ok;
}

}  // namespace

int reseal_secrets(bool dry_run) {
  const auto env = cli_environment();
  const auto file = [&](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  secrets::sealing_keyring ring;
  try {
    ring = secrets::load_keyring({file("OUTBOX_SEALING_KEY_FILE"), file("OUTBOX_SEALING_KEY_FILE_PREVIOUS")});
  } catch (const std::runtime_error& e) {
    std::cerr << "dispatcher keys reseal: " << e.what() << "\n";
    return exit_usage;
  }
  if (ring.empty()) {
    std::cerr << "dispatcher keys reseal: no key file: set OUTBOX_SEALING_KEY_FILE (the new key) and "
                 "OUTBOX_SEALING_KEY_FILE_PREVIOUS (the old one)\n";
    return exit_usage;
  }
  return with_database(database_conninfo(),
                       [&ring, dry_run](db::connection& conn) { return async_reseal(conn, ring, dry_run); });
}

}  // namespace outbox::cli

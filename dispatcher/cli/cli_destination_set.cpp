// `dispatcher destination set`: create or change a destination in the registry.
// Validated by the code that validates OUTBOX_DEST__ variables; secrets read
// from a file or standard input, never from the command line, and sealed for
// the published key before they reach the database.
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "db/destination_registry_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_destination.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"

namespace outbox::cli {
namespace {

// Problems that concern the entry as it will be, leaving out those about
// sealed secrets this command did not change (it cannot open them; the value
// that passed when it was set stands in for them).
std::vector<std::string> set_problems(const destination_change& c, const db::registry_entry& next) {
  std::map<std::string, std::string> keys = next.settings;
  for (const auto& [key, sealed] : next.secrets) {
    const auto given = c.secrets.find(key);
    keys[key] = given != c.secrets.end() ? given->second : "sealed";
  }
  std::vector<std::string> out;
  for (const auto& [key, message] : check_destination(c.provider, c.name, keys).problems) {
    const bool untouched_secret = next.secrets.contains(key) && !c.secrets.contains(key);
    if (!untouched_secret) out.push_back((key.empty() ? "" : key + ": ") + message);
  }
  return out;
}

// `key`: the published key; only read when the change sets a secret.
db::registry_entry changed_entry(const destination_change& c, const std::optional<db::registry_entry>& current,
                                 const std::optional<secrets::sealing_key>& key) {
  db::registry_entry next = current.value_or(db::registry_entry{});
  for (const auto& [k, v] : c.settings) {
    next.secrets.erase(k);
    if (v.empty()) {
      next.settings.erase(k);
    } else {
      next.settings[k] = v;
    }
  }
  for (const auto& [k, v] : c.secrets) {
    next.settings.erase(k);
    next.secrets[k] = key->seal(v, secrets::secret_context(c.provider, c.name, k));
  }
  if (c.enabled) next.enabled = *c.enabled;
  return next;
}

boost::asio::awaitable<int> async_set_destination(db::connection& conn, destination_change c) {
  const auto keys = co_await db::async_sealing_keys(conn);
  const auto current_key = std::find_if(keys.begin(), keys.end(), [](const auto& k) { return k.is_current; });
  if (!c.secrets.empty() && current_key == keys.end()) {
    std::cerr << "dispatcher destination set: no sealing key is published, so the secret cannot be stored: run "
                 "`dispatcher keys publish` where the dispatcher's key file is (docs/destinations.md#secrets)\n";
    co_return exit_failure;
  }
  std::optional<secrets::sealing_key> key;
  if (current_key != keys.end()) key = secrets::sealing_key::from_public_raw(current_key->public_key);
  std::vector<std::string> problems;
  bool created = false;
  const bool stored = co_await db::async_change_registry_entry(
      conn, c.provider, c.name,
      [&](const std::optional<db::registry_entry>& current) -> std::optional<db::registry_entry> {
        created = !current;
        auto next = changed_entry(c, current, key);
        problems = set_problems(c, next);
        if (!problems.empty() || c.dry_run) return std::nullopt;
        return next;
      },
      operator_name());
  const std::string name = terminal_text(c.provider) + "/" + terminal_text(c.name);
  if (!problems.empty()) {
    std::cerr << "dispatcher destination set: " << name << " is not valid; nothing was changed:\n";
    for (const auto& p : problems) std::cerr << "  " << terminal_text(p) << "\n";
    co_return exit_usage;
  }
  if (!stored) {
    std::cout << name << " is valid; --dry-run: nothing was changed\n";
    co_return exit_ok;
  }
  std::cout << name << (created ? " created" : " updated") << "; running dispatchers apply it within 2 s\n";
  co_return exit_ok;
}

}  // namespace

std::optional<std::string> read_secret_source(const std::string& source, bool& stdin_used) {
  if (source == "-") {
    if (stdin_used) return std::nullopt;
    stdin_used = true;
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    if (text.ends_with('\n')) text.pop_back();
    return text;
  }
  std::ifstream in(source, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  std::string value = text.str();
  if (value.ends_with('\n')) value.pop_back();  // `echo token > file` adds one
  return value;
}

int set_destination(destination_change change) {
  return with_database(database_conninfo(), [change = std::move(change)](db::connection& conn) {
    return async_set_destination(conn, change);
  });
}

}  // namespace outbox::cli

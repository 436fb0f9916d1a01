// `dispatcher destination set|list|show|remove`: the destinations kept in the
// database, beside those of the environment (docs/destinations.md).
#include <iostream>

#include <nlohmann/json.hpp>

#include "db/destination_registry_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/cli/cli_destination.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/secrets/sealed_secret.hpp"
#include "providers/text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* destination_help =
    R"(usage: dispatcher destination set PROVIDER NAME [KEY=VALUE...] [--secret KEY=@FILE...]
                                   [--enable | --disable] [--dry-run]
       dispatcher destination list [--json]
       dispatcher destination show PROVIDER NAME [--json]
       dispatcher destination remove PROVIDER NAME [--dry-run] [--force]

Destinations kept in the database: every running dispatcher applies a change
within 2 s, without a restart. The keys are those of OUTBOX_DEST__<PROVIDER>__
<NAME>__<KEY> (URL, PIXEL_ID, CONCURRENCY, RATE_PER_SECOND, PAUSED,
HEADER__X_FOO, ...; any case), checked as the environment's are.

  set     creates the destination or changes the keys given; KEY= (empty)
          removes a key. A secret (SECRET, ACCESS_TOKEN, APP_SECRET,
          CLIENT_SECRET, REFRESH_TOKEN, DEVELOPER_TOKEN, a secret-looking
          header) is read with --secret KEY=@FILE, or KEY=@- from standard
          input, never from the command line, and sealed for the published
          key (`dispatcher keys publish`) before it is stored.
  list    every destination in the database, secrets masked.
  show    one destination's keys, secrets masked, and any problem with them.
  remove  deletes it; refused while rows are still pending for it, unless
          --force (they then wait as rows of an unknown destination do).
)";

std::string destination_display_name(const std::string& provider, const std::string& name) {
  return terminal_text(provider) + "/" + terminal_text(name);
}

// "HEADER__X_FOO" -> "header__x-foo"; other keys lower-case.
std::string registry_key(std::string_view raw) {
  std::string key = providers::ascii_lowercase(raw);
  if (key.starts_with(header_key_prefix)) {
    std::replace(key.begin() + static_cast<std::ptrdiff_t>(header_key_prefix.size()), key.end(), '_', '-');
  }
  return key;
}

// A plain setting whose key is a secret's (written by hand): never shown.
std::string shown_value(const std::string& key, const std::string& value) {
  return is_secret_setting(key) ? "*** (not sealed: set it again with --secret)" : value;
}

nlohmann::json registry_entry_json(const db::registry_entry& e) {
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [key, value] : e.settings) settings[key] = shown_value(key, value);
  nlohmann::json secrets = nlohmann::json::object();
  for (const auto& [key, sealed] : e.secrets) {
    secrets[key] = "*** (sealed for key " + secrets::sealed_key_id(sealed).value_or("?") + ")";
  }
  return {{"provider", e.provider},     {"name", e.name},
          {"enabled", e.enabled},       {"settings", settings},
          {"secrets", secrets},         {"created_at", e.created_at},
          {"updated_at", e.updated_at}, {"updated_by", e.updated_by}};
}

void print_registry_json(const nlohmann::json& doc) {
  std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

boost::asio::awaitable<int> async_list_destinations(db::connection& conn, bool json) {
  const auto entries = co_await db::async_list_registry(conn);
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& e : entries) all.push_back(registry_entry_json(e));
    print_registry_json(all);
    co_return exit_ok;
  }
  for (const auto& e : entries) {
    std::cout << destination_display_name(e.provider, e.name) << (e.enabled ? "  enabled" : "  disabled") << "  "
              << e.settings.size() << " settings, " << e.secrets.size() << " secrets  updated "
              << terminal_text(e.updated_at) << " by " << terminal_text(e.updated_by) << "\n";
  }
  if (entries.empty()) std::cout << "no destination is kept in the database\n";
  co_return exit_ok;
}

boost::asio::awaitable<int> async_show_destination(db::connection& conn, std::string provider, std::string name,
                                                   bool json) {
  const auto entry = co_await db::async_registry_entry(conn, provider, name);
  if (!entry) {
    std::cerr << "dispatcher destination show: " << destination_display_name(provider, name)
              << " is not in the database\n";
    co_return exit_failure;
  }
  std::map<std::string, std::string> keys = entry->settings;
  for (const auto& [key, sealed] : entry->secrets) keys[key] = "sealed";
  std::vector<std::string> problems;
  for (const auto& [key, message] : check_destination(provider, name, keys).problems) {
    if (!entry->secrets.contains(key)) problems.push_back((key.empty() ? "" : key + ": ") + message);
  }
  if (json) {
    auto doc = registry_entry_json(*entry);
    doc["problems"] = problems;
    print_registry_json(doc);
    co_return exit_ok;
  }
  std::cout << destination_display_name(provider, name) << (entry->enabled ? "  enabled" : "  disabled") << "\n";
  for (const auto& [key, value] : entry->settings) {
    std::cout << "  " << key << "=" << terminal_text(shown_value(key, value)) << "\n";
  }
  for (const auto& [key, sealed] : entry->secrets) {
    std::cout << "  " << key << "=*** (sealed for key " << secrets::sealed_key_id(sealed).value_or("?") << ")\n";
  }
  std::cout << "  created " << terminal_text(entry->created_at) << ", updated " << terminal_text(entry->updated_at)
            << " by " << terminal_text(entry->updated_by) << "\n";
  for (const auto& p : problems) std::cout << "  problem: " << terminal_text(p) << "\n";
  co_return exit_ok;
}

boost::asio::awaitable<int> async_remove_destination(db::connection& conn, std::string provider, std::string name,
                                                     bool dry_run, bool force) {
  const auto entry = co_await db::async_registry_entry(conn, provider, name);
  const std::string shown = destination_display_name(provider, name);
  if (!entry) {
    std::cerr << "dispatcher destination remove: " << shown << " is not in the database\n";
    co_return exit_failure;
  }
  const auto rows = co_await db::async_unfinished_rows(conn, provider, name);
  if (rows > 0 && !force) {
    std::cerr << "dispatcher destination remove: refused: " << rows << " row(s) are still pending or sending for "
              << shown << "; disable it instead (`destination set " << shown
              << " --disable`: its rows wait), or pass --force\n";
    co_return exit_failure;
  }
  if (dry_run) {
    std::cout << shown << " would be removed (" << rows << " row(s) not final for it); --dry-run: nothing changed\n";
    co_return exit_ok;
  }
  (void)co_await db::async_remove_registry_entry(conn, provider, name);
  std::cout << shown << " removed";
  if (rows > 0) {
    std::cout << " (" << rows << " row(s) not final for it: they wait for a destination of that name until "
              << "OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS after their insert, then are dead)";
  }
  std::cout << "\n";
  co_return exit_ok;
}

// The KEY=VALUE words after PROVIDER NAME and the --secret KEY=@SOURCE options;
// a problem in words for the user, or nullopt.
std::optional<std::string> read_destination_change(const std::vector<std::string>& words,
                                                   const std::vector<std::string>& secret_args,
                                                   destination_change& change) {
  for (std::size_t i = 3; i < words.size(); ++i) {
    const auto eq = words[i].find('=');
    if (eq == std::string::npos || eq == 0) return "expected KEY=VALUE, got '" + terminal_text(words[i]) + "'";
    const std::string key = registry_key(std::string_view{words[i]}.substr(0, eq));
    std::string value = words[i].substr(eq + 1);
    if (is_secret_setting(key) && !value.empty()) {
      return key + " is a secret: give it with --secret " + key +
             "=@FILE, or =@- to read standard input, never on "
             "the command line (it would stay in the shell's history and show in ps)";
    }
    change.settings[key] = std::move(value);
  }
  bool stdin_used = false;
  for (const auto& arg : secret_args) {
    const auto eq = arg.find("=@");
    if (eq == std::string::npos || eq == 0)
      return "expected --secret KEY=@FILE or KEY=@-, got '" + terminal_text(arg) + "'";
    const std::string key = registry_key(std::string_view{arg}.substr(0, eq));
    const std::string source = arg.substr(eq + 2);
    auto value = read_secret_source(source, stdin_used);
    if (!value) {
      return source == "-" ? "standard input can give one secret only"
                           : "cannot read the secret for " + key + " from " + terminal_text(source);
    }
    if (value->empty()) return "the secret for " + key + " is empty (" + terminal_text(source) + ")";
    change.settings.erase(key);
    change.secrets[key] = std::move(*value);
  }
  return std::nullopt;
}

// Runs the verb of words[0] once the options are read.
int run_destination_verb(const std::vector<std::string>& words, const std::vector<std::string>& secret_args,
                         destination_change change, bool json, bool force) {
  const std::string verb = words.empty() ? "" : words.front();
  if (verb == "list" && words.size() == 1) {
    return with_database(database_conninfo(),
                         [json](db::connection& conn) { return async_list_destinations(conn, json); });
  }
  if (words.size() < 3 || (verb != "set" && words.size() != 3)) {
    std::cerr << destination_help;
    return exit_usage;
  }
  const std::string provider = providers::ascii_lowercase(words[1]);
  const std::string name = providers::ascii_lowercase(words[2]);
  if (verb == "show") {
    return with_database(database_conninfo(),
                         [=](db::connection& conn) { return async_show_destination(conn, provider, name, json); });
  }
  if (verb == "remove") {
    const bool dry_run = change.dry_run;
    return with_database(database_conninfo(), [=](db::connection& conn) {
      return async_remove_destination(conn, provider, name, dry_run, force);
    });
  }
  if (verb != "set") {
    std::cerr << destination_help;
    return exit_usage;
  }
  change.provider = provider;
  change.name = name;
  const auto problem = read_destination_change(words, secret_args, change);
  if (problem) {
    std::cerr << "dispatcher destination set: " << *problem << "\n";
    return exit_usage;
  }
  return set_destination(std::move(change));
}

}  // namespace

int destination_command(std::span<const std::string> args) {
  arg_reader r(args);
  std::vector<std::string> words;
  destination_change change;
  std::vector<std::string> secret_args;
  bool json = false;
  bool force = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << destination_help;
      return exit_ok;
    }
    if (r.flag("--json")) {
      json = true;
    } else if (r.flag("--force")) {
      force = true;
    } else if (r.flag("--dry-run")) {
      change.dry_run = true;
    } else if (r.flag("--enable")) {
      change.enabled = true;
    } else if (r.flag("--disable")) {
      change.enabled = false;
    } else if (auto v = r.option("--secret")) {
      secret_args.push_back(*v);
    } else if (!r.current().starts_with("--")) {
      words.push_back(r.positional());
    } else {
      std::cerr << "dispatcher destination: unknown or incomplete option '" << r.current() << "'\n" << destination_help;
      return exit_usage;
    }
  }
  return run_destination_verb(words, secret_args, std::move(change), json, force);
}

}  // namespace outbox::cli

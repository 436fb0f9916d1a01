// `dispatcher config`: validate the configuration and print it, secrets masked.
#include <algorithm>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "db/destination_registry_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/registry_entries.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/ops/version.hpp"

namespace outbox::cli {
namespace {

constexpr const char* config_help = R"(usage: dispatcher config [--json] [--registry]

Validates the configuration (environment variables and the optional
OUTBOX_CONFIG_FILE) and prints the effective settings with secrets masked.
Exit code 2 lists every problem, one per line.

Destinations of the registry (outbox_destination, `dispatcher destination`)
are added to these at run time. Where the registry has a destination of the
same provider and name as the environment (or the file), the environment's
wins and the registry's entry is ignored.

  --json      one JSON object instead: {"valid", "version", "settings" (NAME:
              value, the same masked values as the text form), "destinations"
              ([{provider, destination}]), "registry_rule", "warnings"}, or
              {"valid": false, "problems": [...]} (still exit 2)
  --registry  also reads the registry from the database and says, for each of
              its destinations, whether a dispatcher with this configuration
              uses it, ignores it (the environment defines it) or cannot use
              it, and why ("registry" in the JSON form)
)";

constexpr const char* registry_rule =
    "the registry's destinations (outbox_destination) are added at run time; where one has the provider and name "
    "of a destination of the environment or the file, the environment's wins";

// The text form's NAME=value lines as an object: one masking path for both forms.
nlohmann::json settings_json(const config& cfg) {
  auto settings = nlohmann::json::object();
  std::istringstream lines(describe(cfg));
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (line.starts_with("#") || eq == std::string::npos) continue;
    settings[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return settings;
}

nlohmann::json config_json(const config& cfg) {
  auto destinations = nlohmann::json::array();
  for (const auto& d : cfg.destinations) destinations.push_back({{"provider", d.provider}, {"destination", d.name}});
  return {{"valid", true},
          {"version", std::string(version())},
          {"revision", std::string(revision())},
          {"settings", settings_json(cfg)},
          {"destinations", destinations},
          {"registry_rule", registry_rule},
          {"warnings", cfg.warnings}};
}

// Each registry destination as a dispatcher with `cfg` would take it.
nlohmann::json registry_view(const config& cfg, const std::vector<db::registry_entry>& entries) {
  const auto keys = load_registry_keys(cfg);
  const auto interpreted = interpret_registry(entries, keys);
  auto out = nlohmann::json::array();
  for (const auto& e : interpreted) {
    const bool shadowed = std::any_of(cfg.destinations.begin(), cfg.destinations.end(),
                                      [&](const auto& d) { return d.provider == e.provider && d.name == e.name; });
    std::string use = shadowed   ? "ignored: the environment defines " + e.provider + "/" + e.name
                      : e.config ? "used"
                                 : "not usable: " + e.unusable;
    out.push_back({{"provider", e.provider}, {"destination", e.name}, {"use", use}});
  }
  return out;
}

boost::asio::awaitable<int> async_print_registry(db::connection& conn, const config& cfg, bool json) {
  const auto view = registry_view(cfg, co_await db::async_list_registry(conn));
  if (json) {
    auto out = config_json(cfg);
    out["registry"] = view;
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    co_return exit_ok;
  }
  std::cout << describe(cfg) << "# " << registry_rule << "\n";
  if (view.empty()) std::cout << "# the registry has no destination\n";
  for (const auto& v : view) {
    std::cout << "registry " << terminal_text(v["provider"].get<std::string>()) << "/"
              << terminal_text(v["destination"].get<std::string>()) << ": "
              << terminal_text(v["use"].get<std::string>()) << "\n";
  }
  co_return exit_ok;
}

}  // namespace

int config_command(std::span<const std::string> args) {
  bool json = false;
  bool registry = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << config_help;
      return exit_ok;
    }
    if (a == "--json" || a == "--registry") {
      (a == "--json" ? json : registry) = true;
      continue;
    }
    std::cerr << "dispatcher config: unknown option '" << a << "'\n" << config_help;
    return exit_usage;
  }
  try {
    const auto cfg = load_config(cli_environment());
    if (registry) {
      if (!json) {
        for (const auto& w : cfg.warnings) std::cerr << "warning: " << w << "\n";
      }
      return with_database(database_conninfo(),
                           [&cfg, json](db::connection& conn) { return async_print_registry(conn, cfg, json); });
    }
    if (json) {
      std::cout << config_json(cfg).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return exit_ok;
    }
    std::cout << describe(cfg) << "# " << registry_rule << " (`dispatcher config --registry` lists them)\n";
    for (const auto& w : cfg.warnings) std::cerr << "warning: " << w << "\n";
    return exit_ok;
  } catch (const config_error& e) {
    if (json) {
      std::cout << nlohmann::json{{"valid", false}, {"problems", e.problems()}}.dump(
                       2, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
      return exit_usage;
    }
    std::cerr << "dispatcher config: configuration error:\n" << e.what() << "\n";
    return exit_usage;
  }
}

}  // namespace outbox::cli

// `dispatcher config`: validate the configuration and print it, secrets masked.
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dispatcher/cli/cli.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/ops/version.hpp"

namespace outbox::cli {
namespace {

constexpr const char* config_help = R"(usage: dispatcher config [--json]

Validates the configuration (environment variables and the optional
OUTBOX_CONFIG_FILE) and prints the effective settings with secrets masked.
Exit code 2 lists every problem, one per line.

  --json   one JSON object instead: {"valid", "version", "settings" (NAME:
           value, the same masked values as the text form), "destinations"
           ([{provider, destination}]), "warnings"}, or {"valid": false,
           "problems": [...]} (still exit 2)
)";

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
          {"warnings", cfg.warnings}};
}

}  // namespace

int config_command(std::span<const std::string> args) {
  bool json = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << config_help;
      return exit_ok;
    }
    if (a == "--json") {
      json = true;
      continue;
    }
    std::cerr << "dispatcher config: unknown option '" << a << "'\n" << config_help;
    return exit_usage;
  }
  try {
    const auto cfg = load_config(cli_environment());
    if (json) {
      std::cout << config_json(cfg).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return exit_ok;
    }
    std::cout << describe(cfg);
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

// `dispatcher config`: validate the configuration and print it, secrets masked.
#include <iostream>

#include "dispatcher/cli.hpp"
#include "dispatcher/config.hpp"

namespace outbox::cli {

int config_command(std::span<const std::string> args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << "usage: dispatcher config\n\nValidates the configuration (environment variables and the optional\n"
                   "OUTBOX_CONFIG_FILE) and prints the effective settings with secrets masked.\n"
                   "Exit code 2 lists every problem, one per line.\n";
      return exit_ok;
    }
    std::cerr << "dispatcher config: unknown option '" << a << "'\n";
    return exit_usage;
  }
  try {
    const auto cfg = load_config(process_environment());
    std::cout << describe(cfg);
    for (const auto& w : cfg.warnings) std::cerr << "warning: " << w << "\n";
    return exit_ok;
  } catch (const config_error& e) {
    std::cerr << "dispatcher config: configuration error:\n" << e.what() << "\n";
    return exit_usage;
  }
}

}  // namespace outbox::cli

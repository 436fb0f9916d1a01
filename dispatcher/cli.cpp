#include "dispatcher/cli.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>

namespace outbox::cli {
namespace {

struct subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(std::span<const std::string>);
};

constexpr subcommand subcommands[] = {
    {"run", "run the dispatcher until SIGTERM/SIGINT", &run_command},
    {"migrate", "apply pending schema migrations (safe to run concurrently and repeatedly)", &migrate_command},
    {"sweep", "reset rows whose lease expired (stuck in sending); --dry-run to look first", &sweep_command},
    {"config", "validate the configuration and print it with secrets masked", &config_command},
};

void print_usage(std::ostream& out) {
  out << "usage: dispatcher <command> [options]\n\ncommands:\n";
  for (const auto& c : subcommands) out << "  " << c.name << std::string(12 - c.name.size(), ' ') << c.summary << "\n";
  out << "\nRun `dispatcher <command> --help` for a command's options.\n"
         "The database comes from DATABASE_URL, else the libpq environment (PGHOST, PGDATABASE, ...).\n";
}

}  // namespace

std::string database_conninfo() {
  const char* url = std::getenv("DATABASE_URL");
  return url ? url : "";
}

int main(std::span<const std::string> args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? exit_usage : exit_ok;
  }
  for (const auto& c : subcommands) {
    if (c.name != args[0]) continue;
    try {
      return c.run(args.subspan(1));
    } catch (const std::exception& e) {
      std::cerr << "dispatcher " << c.name << ": error: " << e.what() << "\n";
      return exit_failure;
    }
  }
  std::cerr << "dispatcher: unknown command '" << args[0] << "'\n\n";
  print_usage(std::cerr);
  return exit_usage;
}

}  // namespace outbox::cli

#include "dispatcher/cli.hpp"
#include "dispatcher/config.hpp"
#include "dispatcher/terminal_text.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

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
    {"status", "counts by state and destination, oldest due row, expired leases, pauses", &status_command},
    {"inspect", "one row and its attempts log", &inspect_command},
    {"requeue", "move dead (or held) rows back to pending; --dry-run to look first", &requeue_command},
    {"pause", "stop sending to a destination (all dispatchers)", &pause_command},
    {"resume", "resume a paused destination; its waiting rows become due now", &resume_command},
    {"prune", "delete (or archive) sent rows older than a retention period", &prune_command},
    {"import-ledgers", "record the CRM's JSON sent-ledgers as sent rows; --dry-run to look first", &import_ledgers_command},
    {"wake-mode", "show or switch how inserts wake dispatchers: always, adaptive or off", &wake_mode_command},
};

void print_usage(std::ostream& out) {
  out << "usage: dispatcher <command> [options]\n\ncommands:\n";
  std::size_t width = 0;
  for (const auto& c : subcommands) width = std::max(width, c.name.size());
  for (const auto& c : subcommands) out << "  " << c.name << std::string(width + 2 - c.name.size(), ' ') << c.summary << "\n";
  out << "\nRun `dispatcher <command> --help` for a command's options.\n"
         "The database comes from DATABASE_URL, else the libpq environment (PGHOST, PGDATABASE, ...).\n";
}

}  // namespace

std::string database_conninfo() {
  // The same source `run` uses (environment, then OUTBOX_CONFIG_FILE). On-call
  // commands must work even when some unrelated setting is invalid, so fall back.
  try {
    return load_config(process_environment()).database_url;
  } catch (const config_error&) {
  }
  const char* url = std::getenv("DATABASE_URL");
  return url ? url : "";
}

int with_database(const std::string& conninfo, std::function<boost::asio::awaitable<int>(db::connection&)> work) {
  boost::asio::io_context io;
  auto run = [&]() -> boost::asio::awaitable<int> {
    using namespace std::chrono_literals;
    auto conn = co_await db::connection::async_connect(io.get_executor(), conninfo, 10s);
    co_return co_await work(conn);
  };
  auto fut = boost::asio::co_spawn(io, run(), boost::asio::use_future);
  io.run();
  return fut.get();
}

std::string operator_name() {
  const char* user = std::getenv("USER");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(user && *user ? user : "unknown") + "@" + (host[0] ? host : "localhost");
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
      // Database errors can quote row data: escaped for the terminal.
      std::cerr << "dispatcher " << c.name << ": error: " << terminal_text(e.what()) << "\n";
      return exit_failure;
    }
  }
  std::cerr << "dispatcher: unknown command '" << args[0] << "'\n\n";
  print_usage(std::cerr);
  return exit_usage;
}

}  // namespace outbox::cli

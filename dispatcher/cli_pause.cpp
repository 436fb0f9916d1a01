// `dispatcher pause` / `resume`: stop and restart deliveries to one destination.
#include <iostream>

#include "db/operations_store.hpp"
#include "dispatcher/cli.hpp"
#include "dispatcher/cli_args.hpp"
#include "dispatcher/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* pause_help = R"(usage: dispatcher pause PROVIDER DESTINATION [--reason TEXT]
       dispatcher pause --list

Stops deliveries to a destination on every dispatcher (they re-read pauses
every OUTBOX_SWEEP_INTERVAL_SECONDS; requests already in flight finish). Rows
keep waiting as pending; nothing is lost or burned. `dispatcher resume`
undoes it.
)";

constexpr const char* resume_help = R"(usage: dispatcher resume PROVIDER DESTINATION

Resumes a destination paused with `dispatcher pause`; its waiting rows become
due at once and the dispatchers are woken.
)";

}  // namespace

int pause_command(std::span<const std::string> args) {
  arg_reader r(args);
  std::vector<std::string> names;
  std::string reason = "paused by on-call";
  bool list = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << pause_help;
      return exit_ok;
    }
    if (r.flag("--list")) {
      list = true;
    } else if (auto v = r.option("--reason")) {
      reason = *v;
    } else if (!r.current().starts_with("--")) {
      names.push_back(r.positional());
    } else {
      std::cerr << "dispatcher pause: unknown or incomplete option '" << r.current() << "'\n" << pause_help;
      return exit_usage;
    }
  }
  if (!list && names.size() != 2) {
    std::cerr << pause_help;
    return exit_usage;
  }
  return with_database(database_conninfo(), [&](db::connection& conn) -> boost::asio::awaitable<int> {
    if (list) {
      const auto pauses = co_await db::async_list_pauses(conn);
      for (const auto& p : pauses) {
        // Reasons and names are operator text from the database: escaped for the terminal.
        std::cout << terminal_text(p.provider) << "/" << terminal_text(p.destination) << "  since "
                  << terminal_text(p.paused_at) << "  by " << terminal_text(p.paused_by) << ": "
                  << terminal_text(p.reason) << "\n";
      }
      if (pauses.empty()) std::cout << "no destination is paused\n";
      co_return exit_ok;
    }
    const bool fresh = co_await db::async_pause(conn, names[0], names[1], reason, operator_name());
    std::cout << names[0] << "/" << names[1] << (fresh ? " paused" : " was already paused (reason updated)") << "\n";
    co_return exit_ok;
  });
}

int resume_command(std::span<const std::string> args) {
  arg_reader r(args);
  std::vector<std::string> names;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << resume_help;
      return exit_ok;
    }
    if (r.current().starts_with("--")) {
      std::cerr << "dispatcher resume: unknown option '" << r.current() << "'\n" << resume_help;
      return exit_usage;
    }
    names.push_back(r.positional());
  }
  if (names.size() != 2) {
    std::cerr << resume_help;
    return exit_usage;
  }
  return with_database(database_conninfo(), [&](db::connection& conn) -> boost::asio::awaitable<int> {
    const bool resumed = co_await db::async_resume(conn, names[0], names[1]);
    std::cout << names[0] << "/" << names[1] << (resumed ? " resumed" : " was not paused") << "\n";
    co_return resumed ? exit_ok : exit_failure;
  });
}

}  // namespace outbox::cli

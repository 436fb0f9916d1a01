// `dispatcher pause` / `resume`: stop and restart deliveries to one destination.
#include <iostream>
#include <optional>

#include "db/fleet_store.hpp"
#include "db/operations_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/ops/display_time.hpp"
#include "dispatcher/ops/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* pause_help = R"(usage: dispatcher pause PROVIDER DESTINATION [--reason TEXT] [--force]
       dispatcher pause --list

Stops deliveries to a destination on every dispatcher: at once on those that
LISTEN (they are notified), within OUTBOX_SWEEP_INTERVAL_SECONDS on those that
poll; requests already in flight finish. Rows keep waiting as pending; nothing
is lost or burned. `dispatcher resume` undoes it.

The destination must be one a running dispatcher configured (its recorded
policy) or one a row names; --force pauses a name nobody knows yet.
)";

constexpr const char* resume_help = R"(usage: dispatcher resume PROVIDER DESTINATION

Resumes a destination paused with `dispatcher pause`, and lifts the pauses the
dispatchers took by themselves after a destination-wide failure or an open
circuit ("retry now"). Its waiting rows become due at once and the dispatchers
are woken. Exit status 1 when nothing was paused.
)";

// Checks the names before pausing: a typo must not report "paused" for nothing.
boost::asio::awaitable<std::optional<std::string>> name_problem(db::connection& conn, const std::string& provider,
                                                                const std::string& destination) {
  if (!is_known_provider(provider)) {
    co_return "unknown provider '" + terminal_text(provider) + "' (known: " + known_provider_names() + ")";
  }
  // Awaited before the test: GCC 12 miscompiles co_await inside a condition.
  const bool known = co_await db::async_known_destination(conn, provider, destination);
  if (!known) {
    co_return "no dispatcher has configured " + terminal_text(provider) + "/" + terminal_text(destination) +
        " and no row names it; check the name, or pass --force";
  }
  co_return std::nullopt;
}

// Lists the pauses (--list), or pauses names[0]/names[1]: provider and destination.
boost::asio::awaitable<int> async_pause_or_list(db::connection& conn, std::vector<std::string> names,
                                                std::string reason, bool list, bool force) {
  if (list) {
    const auto pauses = co_await db::async_list_pauses(conn);
    for (const auto& p : pauses) {
      // Reasons and names are operator text from the database: escaped for the terminal.
      std::cout << terminal_text(p.provider) << "/" << terminal_text(p.destination) << "  since "
                << terminal_text(display_time(p.paused_at)) << "  by " << terminal_text(p.paused_by) << ": "
                << terminal_text(p.reason) << "\n";
    }
    if (pauses.empty()) std::cout << "no destination is paused\n";
    co_return exit_ok;
  }
  if (!force) {
    const auto problem = co_await name_problem(conn, names[0], names[1]);
    if (problem) {
      std::cerr << "dispatcher pause: " << *problem << "\n";
      co_return exit_usage;
    }
  }
  const bool fresh = co_await db::async_pause(conn, names[0], names[1], reason, operator_name());
  co_await db::async_signal_pauses(conn);
  std::cout << terminal_text(names[0]) << "/" << terminal_text(names[1])
            << (fresh ? " paused" : " was already paused (reason updated)") << "\n";
  co_return exit_ok;
}

boost::asio::awaitable<int> async_resume_destination(db::connection& conn, std::string provider,
                                                     std::string destination) {
  const bool resumed = co_await db::async_resume(conn, provider, destination);
  const auto automatic = co_await db::async_request_resume(conn, provider, destination, operator_name());
  const std::string name = terminal_text(provider) + "/" + terminal_text(destination);
  if (resumed) std::cout << name << " resumed (on-call pause lifted)\n";
  if (automatic > 0) {
    std::cout << name << ": automatic pause lifted on " << automatic << " dispatcher(s) (retry now)\n";
  }
  if (!resumed && automatic == 0) std::cout << name << " was not paused\n";
  co_return resumed || automatic > 0 ? exit_ok : exit_failure;
}

}  // namespace

int pause_command(std::span<const std::string> args) {
  arg_reader r(args);
  std::vector<std::string> names;
  std::string reason = "paused by on-call";
  bool list = false;
  bool force = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << pause_help;
      return exit_ok;
    }
    if (r.flag("--list")) {
      list = true;
    } else if (r.flag("--force")) {
      force = true;
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
  return with_database(database_conninfo(),
                       [names = std::move(names), reason = std::move(reason), list, force](db::connection& conn) {
                         return async_pause_or_list(conn, names, reason, list, force);
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
  return with_database(database_conninfo(), [names = std::move(names)](db::connection& conn) {
    return async_resume_destination(conn, names[0], names[1]);
  });
}

}  // namespace outbox::cli

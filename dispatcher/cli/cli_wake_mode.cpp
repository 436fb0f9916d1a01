// `dispatcher wake-mode`: show or switch how the CRM's inserts wake dispatchers.
#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

#include "db/error.hpp"
#include "db/wake_signal.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/ops/display_time.hpp"

namespace outbox::cli {
namespace {

constexpr const char* wake_mode_help =
    R"(usage: dispatcher wake-mode [always|adaptive|off] [--lock-timeout-ms N] [--json]

Without a mode: shows the database's wake mode, whether the insert trigger is
enabled, and which dispatchers are marked awake. With a mode: switches it on
the live system (safe while the CRM writes and dispatchers run).

  always    every inserting statement sends pg_notify: lowest latency, but at
            high insert rates the CRM's commits queue on NOTIFY's global lock
  adaptive  (default) statements skip pg_notify while a dispatcher is draining
            and will claim again within milliseconds anyway
  off       no trigger: dispatchers find rows by polling only (set
            OUTBOX_POLL_INTERVAL_MS to the delay you accept)

Switching to or from `off` enables or disables the trigger, which needs a
brief table lock; the command waits for it at most --lock-timeout-ms (default
3000) and fails rather than queue the CRM's inserts behind it. Dispatchers
pick up a change within OUTBOX_SWEEP_INTERVAL_SECONDS.
)";

void print_status(const db::wake_status& s) {
  std::cout << "wake mode: " << s.mode << " (set " << display_time(s.changed_at) << " by " << s.changed_by << ")\n"
            << "insert trigger: " << (s.trigger_enabled ? "enabled" : "disabled") << "\n";
  if (s.mode != "off" && !s.trigger_enabled) {
    std::cout << "warning: the trigger is disabled although the mode is " << s.mode << ": run `dispatcher wake-mode "
              << s.mode << "` to enable it\n";
  }
  if (s.awake.empty()) std::cout << "dispatchers marked awake: none\n";
  for (const auto& a : s.awake) {
    std::cout << "dispatcher marked awake: " << a.instance
              << (a.expires_in_seconds >= 0 ? " (expires in " : " (expired ") << std::abs(a.expires_in_seconds)
              << (a.expires_in_seconds >= 0 ? " s)\n" : " s ago)\n");
  }
}

nlohmann::json to_json(const db::wake_status& s) {
  nlohmann::json awake = nlohmann::json::array();
  for (const auto& a : s.awake)
    awake.push_back({{"instance", a.instance}, {"expires_in_seconds", a.expires_in_seconds}});
  return {{"mode", s.mode},
          {"trigger_enabled", s.trigger_enabled},
          {"changed_at", s.changed_at},
          {"changed_by", s.changed_by},
          {"awake", awake}};
}

// Switches to `mode` when one is given, then prints the status.
boost::asio::awaitable<int> async_show_or_switch_wake_mode(db::connection& conn, std::optional<std::string> mode,
                                                           bool json, long lock_timeout_ms) {
  std::optional<std::string> previous;
  if (mode) {
    auto set = co_await db::async_try(
        db::async_set_wake_mode(conn, *mode, operator_name(), std::chrono::milliseconds(lock_timeout_ms)));
    if (!set && set.error().sqlstate() == "55P03") {  // this command's own lock timeout, not the CLI's usual one
      std::cerr << "dispatcher wake-mode: gave up after " << lock_timeout_ms
                << " ms (--lock-timeout-ms) waiting for the lock on event_delivery that switching the trigger "
                   "needs (a long transaction or a migration holds it); the wake mode is unchanged: try again, "
                   "or raise --lock-timeout-ms\n";
      co_return exit_failure;
    }
    previous = std::move(set).value();
  }
  const auto status = co_await db::async_wake_status(conn);
  if (json) {
    auto doc = to_json(status);
    if (previous) doc["previous_mode"] = *previous;
    std::cout << doc.dump(2) << "\n";
  } else {
    if (previous) std::cout << "switched wake mode: " << *previous << " -> " << *mode << "\n";
    print_status(status);
  }
  co_return exit_ok;
}

}  // namespace

int wake_mode_command(std::span<const std::string> args) {
  arg_reader r(args);
  std::optional<std::string> mode;
  bool json = false;
  long lock_timeout_ms = 3000;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << wake_mode_help;
      return exit_ok;
    }
    if (r.flag("--json")) {
      json = true;
    } else if (auto v = r.option("--lock-timeout-ms")) {
      try {
        lock_timeout_ms = std::stol(*v);
      } catch (const std::exception&) {
        lock_timeout_ms = -1;
      }
      if (lock_timeout_ms < 1 || lock_timeout_ms > 600000) {
        std::cerr << "dispatcher wake-mode: --lock-timeout-ms must be 1 to 600000\n";
        return exit_usage;
      }
    } else if (!r.current().starts_with("--") && !mode) {
      mode = r.positional();
      if (*mode != "always" && *mode != "adaptive" && *mode != "off") {
        std::cerr << "dispatcher wake-mode: unknown mode '" << *mode << "' (always, adaptive or off)\n";
        return exit_usage;
      }
    } else {
      std::cerr << "dispatcher wake-mode: unexpected argument '" << r.current() << "'\n" << wake_mode_help;
      return exit_usage;
    }
  }
  return with_database(database_conninfo(), [mode = std::move(mode), json, lock_timeout_ms](db::connection& conn) {
    return async_show_or_switch_wake_mode(conn, mode, json, lock_timeout_ms);
  });
}

}  // namespace outbox::cli

// `dispatcher run`: the long-running dispatcher process.
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <iostream>
#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/engine.hpp"
#include "dispatcher/ops/allocator_tuning.hpp"
#include "dispatcher/ops/metrics_server.hpp"
#include "providers/user_data/user_data_module.hpp"

namespace outbox::cli {
namespace {

namespace asio = boost::asio;

constexpr const char* run_help = R"(usage: dispatcher run [--migrate]

Runs the dispatcher until SIGTERM or SIGINT: wakes on NOTIFY (and polls),
claims due rows under a lease, delivers them, and records each outcome.
On SIGTERM/SIGINT it stops claiming, lets requests in flight finish within
OUTBOX_SHUTDOWN_GRACE_SECONDS, gives back the rest and exits 0. A second
signal exits at once. A signal during start-up (connecting, migrating) exits 0
at once: nothing was claimed yet, and an unfinished migration is rolled back.

  --migrate   apply pending schema migrations before starting

Configuration comes from environment variables (see `dispatcher config` and
docs/configuration.md). Exit codes: 0 clean stop, 1 failure, 2 bad configuration.
)";

// Checks the database once at start so a wrong URL or missing schema fails fast
// with one line instead of a retry loop in the logs.
asio::awaitable<void> async_preflight(asio::any_io_executor ex, const config& cfg, bool migrate, logger& log) {
  using namespace std::chrono_literals;
  auto conn = co_await db::connection::async_connect(ex, cfg.database_url, 10s);
  const auto& all = db::embedded_migrations();
  if (migrate) {
    const auto report = co_await db::async_migrate(conn, all, db::migrate_options{.allow_table_rewrite = false});
    for (const auto& name : report.applied) log.info("migration applied", {{"name", name}});
    co_return;
  }
  const auto applied = co_await db::async_applied_migrations(conn);
  if (applied.size() < all.size()) {
    throw std::runtime_error("the database schema is not up to date (" + std::to_string(applied.size()) + " of " +
                             std::to_string(all.size()) +
                             " migrations applied): run `dispatcher migrate` or start with --migrate");
  }
}

// Reads the options into `migrate`; an exit code when the command ends here (--help, a bad option).
std::optional<int> read_args(std::span<const std::string> args, bool& migrate) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << run_help;
      return exit_ok;
    }
    if (a == "--migrate") {
      migrate = true;
      continue;
    }
    std::cerr << "dispatcher run: unknown option '" << a << "'\n" << run_help;
    return exit_usage;
  }
  return std::nullopt;
}

// The process configuration, or nullopt after printing why it is unusable.
std::optional<config> load_run_config() {
  try {
    return load_config(process_environment());
  } catch (const config_error& e) {
    std::cerr << "dispatcher run: configuration error:\n" << e.what() << "\n";
    return std::nullopt;
  }
}

// SIGTERM and SIGINT stay pending from the first line of `run` (main.cpp holds
// them even earlier) until their handler exists: PID 1 in a container drops a
// signal it has no handler for, so a stop sent during start-up would otherwise
// wait for the orchestrator's SIGKILL.
class held_stop_signals {
 public:
  held_stop_signals() {
    sigemptyset(&stop_);
    sigaddset(&stop_, SIGTERM);
    sigaddset(&stop_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_, nullptr);
  }
  // Unblocks rather than restores: main.cpp's hold ends here too.
  ~held_stop_signals() { pthread_sigmask(SIG_UNBLOCK, &stop_, nullptr); }
  held_stop_signals(const held_stop_signals&) = delete;
  held_stop_signals& operator=(const held_stop_signals&) = delete;

 private:
  sigset_t stop_{};
};

const char* signal_name(int signo) { return signo == SIGTERM ? "SIGTERM" : "SIGINT"; }

// Runs async_preflight on `io`, which is left ready to run again; false when a
// signal came first. The abandoned check is freed with `io`, which closes its
// connection: the server rolls back an unfinished migration and frees the
// migration lock as soon as it sees the session gone.
[[nodiscard]] bool preflight(asio::io_context& io, asio::signal_set& signals, const config& cfg, bool migrate,
                             logger& log) {
  std::exception_ptr failure;
  asio::co_spawn(io, async_preflight(io.get_executor(), cfg, migrate, log), [&](std::exception_ptr e) {
    failure = e;
    signals.cancel();  // a signal from now on waits, queued, for run_engine
  });
  bool stopped = false;
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;  // cancelled: the check ended first
    log.info("signal received during start-up; exiting before any claim", {{"signal", signal_name(signo)}});
    stopped = true;
    io.stop();
  });
  io.run();
  io.restart();
  if (stopped) return false;
  if (failure) std::rethrow_exception(failure);  // one clear line via cli::main
  return true;
}

// Runs the engine (and the metrics server) on `io` until it stops; the exit code.
int run_engine(asio::io_context& io, asio::signal_set& signals, const config& cfg, logger& log) {
  engine eng(io.get_executor(), cfg, log);
  bool forced = false;
  int signals_seen = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec,
                                                                             int signo) {
    if (ec) return;
    log.info("signal received", {{"signal", signal_name(signo)}});
    if (++signals_seen == 1) {
      eng.request_stop();
      signals.async_wait(on_signal);
      return;
    }
    forced = true;
    log.warn("second signal: exiting now; rows in flight are retried after their lease expires", {});
    io.stop();
  };
  signals.async_wait(on_signal);

  std::optional<metrics_server> metrics;
  if (cfg.metrics_address && !cfg.metrics_address->empty()) {
    metrics.emplace(io.get_executor(), *cfg.metrics_address,
                    metrics_server::snapshot_fn{[&] { return eng.metrics_snapshot(); }},
                    [&] { return eng.readiness(); });
    asio::co_spawn(io, metrics->async_run(), asio::detached);
    log.info("serving /metrics, /status, /healthz and /readyz",
             {{"address", *cfg.metrics_address}, {"port", metrics->port()}});
  }

  std::optional<metrics_server> probes;
  if (cfg.probe_address) {
    probes.emplace(io.get_executor(), *cfg.probe_address, metrics_server::probes_only, [&] { return eng.readiness(); });
    asio::co_spawn(io, probes->async_run(), asio::detached);
    log.info("serving /healthz and /readyz", {{"address", *cfg.probe_address}, {"port", probes->port()}});
  }

  std::exception_ptr failure;
  asio::co_spawn(io, eng.async_run(), [&](std::exception_ptr e) {
    failure = e;
    if (metrics) metrics->stop();
    if (probes) probes->stop();
    signals.cancel();
    io.stop();  // abandoned requests must not keep the process alive
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return forced ? exit_failure : exit_ok;
}

// Loads the user data module (phone numbers, Unicode matching: about 3 MB) before
// the event loop runs, and only when a destination hashes user data (a webhook
// never does). False, with the places looked in printed, when it is missing.
bool load_user_data_if_hashed(const config& cfg) {
  const bool hashes_user_data = std::any_of(cfg.destinations.begin(), cfg.destinations.end(), [](const auto& d) {
    const auto* kind = find_provider_kind(d.provider);
    return kind == nullptr || kind->hashes_user_data;
  });
  if (!hashes_user_data) return true;
  try {
    providers::load_user_data_module();
    return true;
  } catch (const std::exception& e) {
    std::cerr << "dispatcher run: error: " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int run_command(std::span<const std::string> args) {
  std::optional<held_stop_signals> held(std::in_place);
  bool migrate = false;
  if (const auto done = read_args(args, migrate)) return *done;
  const auto loaded = load_run_config();
  if (!loaded) return exit_usage;
  const config& cfg = *loaded;
  logger log(cfg.min_log_level);
  asio::io_context io(1);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  held.reset();  // a signal held since the first line reaches `signals` now

  if (!load_user_data_if_hashed(cfg)) return exit_failure;
  if (!preflight(io, signals, cfg, migrate, log)) return exit_ok;
  keep_freed_memory_for_reuse();
  return run_engine(io, signals, cfg, log);
}

}  // namespace outbox::cli

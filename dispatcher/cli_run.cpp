// `dispatcher run`: the long-running dispatcher process.
#include <csignal>
#include <iostream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_future.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "dispatcher/cli.hpp"
#include "dispatcher/config.hpp"
#include "dispatcher/engine.hpp"
#include "providers/user_data.hpp"
#include "dispatcher/metrics_server.hpp"

namespace outbox::cli {
namespace {

namespace asio = boost::asio;

constexpr const char* help = R"(usage: dispatcher run [--migrate]

Runs the dispatcher until SIGTERM or SIGINT: wakes on NOTIFY (and polls),
claims due rows under a lease, delivers them, and records each outcome.
On SIGTERM/SIGINT it stops claiming, lets requests in flight finish within
OUTBOX_SHUTDOWN_GRACE_SECONDS, gives back the rest and exits 0. A second
signal exits at once.

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
    const auto report = co_await db::async_migrate(conn, all);
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
      std::cout << help;
      return exit_ok;
    }
    if (a == "--migrate") {
      migrate = true;
      continue;
    }
    std::cerr << "dispatcher run: unknown option '" << a << "'\n" << help;
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

// Runs async_preflight to completion on `io`, which is left ready to run again.
void preflight(asio::io_context& io, const config& cfg, bool migrate, logger& log) {
  auto pre = asio::co_spawn(io, async_preflight(io.get_executor(), cfg, migrate, log), asio::use_future);
  io.run();
  io.restart();
  pre.get();  // throws: one clear line via cli::main
}

// Runs the engine (and the metrics server) on `io` until it stops; the exit code.
int run_engine(asio::io_context& io, const config& cfg, logger& log) {
  engine eng(io.get_executor(), cfg, log);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  bool forced = false;
  int signals_seen = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec,
                                                                               int signo) {
    if (ec) return;
    log.info("signal received", {{"signal", signo == SIGTERM ? "SIGTERM" : "SIGINT"}});
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
    metrics.emplace(
        io.get_executor(), *cfg.metrics_address, [&] { return eng.metrics_snapshot().render(); },
        [&] { return eng.readiness(); });
    asio::co_spawn(io, metrics->async_run(), asio::detached);
    log.info("serving /metrics, /healthz and /readyz", {{"address", *cfg.metrics_address}, {"port", metrics->port()}});
  }

  std::exception_ptr failure;
  asio::co_spawn(io, eng.async_run(), [&](std::exception_ptr e) {
    failure = e;
    if (metrics) metrics->stop();
    signals.cancel();
    io.stop();  // abandoned requests must not keep the process alive
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return forced ? exit_failure : exit_ok;
}

}  // namespace

int run_command(std::span<const std::string> args) {
  bool migrate = false;
  if (const auto done = read_args(args, migrate)) return *done;
  const auto loaded = load_run_config();
  if (!loaded) return exit_usage;
  const config& cfg = *loaded;
  logger log(cfg.min_log_level);

  // Builds the ISO 3166 match indexes (0.1-0.3 s of ICU work) now, before the
  // event loop runs, instead of on the loop at the first country in a row.
  (void)providers::normalize_pii(providers::pii_field::country, "United States");
  (void)providers::normalize_pii(providers::pii_field::state, "California", {"", "us"});
  asio::io_context io(1);
  preflight(io, cfg, migrate, log);
  return run_engine(io, cfg, log);
}

}  // namespace outbox::cli

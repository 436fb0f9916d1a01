#pragma once
// The pieces every scenario with a running dispatcher shares: a scratch
// database, the HTTPS sink and the `dispatcher run` child process
// (dispatcher_setup); CPU and memory figures over a measurement window
// (window); and the delivery figures at the end (finish).
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/event_sink.hpp"
#include "bench/support.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::bench {

class dispatcher_setup {
 public:
  dispatcher_setup(const options& o, const std::string& label);

  // Spawns the dispatcher (output in <log dir>/dispatcher-<label>.log); waits
  // until it listens unless `wait` is false. To start it again, terminate the
  // previous process first (proc().terminate).
  void start(bool wait = true, const std::string& label = "");
  // The dispatcher is ready once its listener ran LISTEN (poll mode: once it connected).
  void wait_ready();
  // SELECT outbox_set_wake_mode(mode): always, adaptive or off. A running
  // dispatcher only re-reads the mode on its sweep timer, so set it before start().
  void set_wake_mode(const std::string& mode);

  [[noreturn]] void failed(const std::string& what);

  [[nodiscard]] nlohmann::json settings() const { return settings_; }
  [[nodiscard]] double rss_ready_mb() const { return rss_ready_mb_; }

  test::scratch_database& db() { return db_; }
  event_sink& sink() { return *sink_; }
  child_process& proc() { return *proc_; }
  // The other dispatchers (options::dispatchers - 1), started with the first
  // under their own instance names.
  std::vector<std::unique_ptr<child_process>>& others() { return others_; }
  [[nodiscard]] std::vector<pid_t> other_pids() const;

 private:
  [[nodiscard]] long long listening_backends();

  const options& opts_;
  std::string label_;
  test::scratch_database db_;
  test::test_ca ca_{"outbox bench CA"};
  std::unique_ptr<event_sink> sink_;
  std::unique_ptr<child_process> proc_;
  std::vector<std::unique_ptr<child_process>> others_;
  nlohmann::json settings_ = nlohmann::json::object();
  double rss_ready_mb_ = 0;
};

// Resource figures over a measurement window.
struct window {
  window(pid_t dispatcher, cluster_cpu& cluster, std::vector<pid_t> other_dispatchers = {})
      : dispatcher_(dispatcher), cluster_(cluster), others(std::move(other_dispatchers)) {}
  [[nodiscard]] double dispatchers_cpu() const;

  // With `conn`, the window also counts the WAL written and the checkpoints
  // completed while it ran, cluster-wide (a checkpoint makes the next change
  // to every page write the whole page to WAL: the largest swing between
  // otherwise equal runs).
  void begin(pg* conn = nullptr);
  // `conn` names the PostgreSQL processes by what they did last (pg_stat_activity).
  void end(pg& conn);
  [[nodiscard]] nlohmann::json figures(double rows) const;

  pid_t dispatcher_;
  cluster_cpu& cluster_;
  std::vector<pid_t> others;  // further dispatchers: their CPU counts as the dispatcher's
  pid_t sink = -1;            // the receiver's process, when it has one of its own
  double sink0 = 0, sink1 = 0;
  double d0 = 0, d1 = 0, pg0 = 0, pg1 = 0, self0 = 0, self1 = 0, hwm = 0;
  std::int64_t wal0 = -1, wal1 = -1, checkpoints0 = 0, checkpoints1 = 0;
  nlohmann::json by_role = nlohmann::json::object();
  machine_cpu m0, m1;
  steady::time_point t0, t1;
};

// Row counts by state.
[[nodiscard]] nlohmann::json state_counts(pg& conn);

// Warnings and errors in a dispatcher log (JSON lines): {"lines": n, "deadlocks": n,
// "messages": {msg: count}}. "deadlocks" counts PostgreSQL's "deadlock detected".
[[nodiscard]] nlohmann::json log_problems(const std::string& path);
// "none", or "3: settle failed; retrying x2, ... (2 deadlocks)".
[[nodiscard]] std::string describe_log_problems(const nlohmann::json& problems);

// Stops the dispatcher and reports requests, duplicates, missing keys, row
// states and the dispatcher's memory and exit.
nlohmann::json finish(dispatcher_setup& s, pg& conn, window& w, const std::vector<sink_hit>& hits,
                      std::size_t expected_rows);

}  // namespace outbox::bench

#pragma once
// Plumbing shared by the benchmark scenarios: options, a blocking libpq
// connection, child processes with CPU/RSS accounting, /proc sampling and
// percentiles. Everything here is synchronous: the only event loop in the
// benchmark process is the HTTPS sink's.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <libpq-fe.h>
#include <nlohmann/json.hpp>

namespace outbox::bench {

using steady = std::chrono::steady_clock;

struct options {
  std::string command;
  std::string dispatcher;  // path of the `dispatcher` executable
  std::string pgbench;     // path of pgbench
  std::string log_dir;     // the dispatcher's and pgbench's output go here
  std::string json_out;    // write all results as JSON here when set

  // throughput
  std::int64_t rows = 50000;
  bool rows_given = false;  // --rows on the command line (batched has its own default)
  int insert_batch = 1000;
  // latency
  double rate = 200;
  double seconds = 20;
  bool seconds_given = false;  // --seconds on the command line (crm has its own default)
  double warmup = 2;
  int producers = 8;  // producer connections sharing the schedule
  // trigger cost
  int trigger_seconds = 30;
  int clients = 16;
  int pgbench_threads = 2;
  std::string trigger_name = "event_delivery_notify_insert";
  // wake modes
  std::vector<int> wake_clients{1, 4, 16, 32};
  int wake_seconds = 20;
  int wake_poll_ms = 100;    // OUTBOX_POLL_INTERVAL_MS in every mode (`none` delivers by polling)
  std::string db_wake_mode;  // set with outbox_set_wake_mode before the dispatcher starts ("": keep)

  // what the rows are and where they go: "webhook" or "meta" (see workload.hpp)
  std::string provider = "webhook";
  int meta_batch = 1000;  // OUTBOX_DEST__META__DEFAULT__BATCH_SIZE

  // dispatcher settings (unset: the dispatcher's own defaults)
  std::optional<int> claim_batch;
  std::optional<int> max_in_flight;
  std::optional<int> concurrency;
  std::string wake;  // "", "listen" or "poll"
  // Scheduler niceness of the dispatcher processes (setpriority after spawn;
  // below 0 needs root): its CPU weight next to busy writers on the same cores.
  std::optional<int> dispatcher_nice;
  bool sign = true;  // configure a webhook secret (HMAC-SHA256 signatures)
  std::vector<std::pair<std::string, std::string>> extra_env;

  int sink_threads = 1;
  // Reset pg_stat_statements where a drain or latency window's statements
  // begin (the drain: before the spawn; latency: once the dispatcher is ready),
  // so the set-up's migration and inserts are not counted (crm).
  bool count_statements = false;
  // "lean": the in-process sink (bench/lean_sink.hpp); "receiver": a Node HTTPS
  // receiver in a process of its own (bench/receiver_process.hpp, webhook only).
  // Empty: receiver for crm, lean for every other scenario.
  std::string sink;
  int dispatchers = 1;                       // dispatcher processes against the one database (throughput, drain)
  std::vector<int> fleet_sizes{1, 2, 4};     // fleet: --dispatchers of each drain
  std::int64_t preload_sent = 0;             // ceiling: `sent` rows in the table before measuring
  std::vector<int> crm_concurrency{10, 50};  // crm: the destination's CONCURRENCY of each pass
  std::vector<int> paused_rows{0, 200000, 2000000};  // paused-backlog: the paused backlog of each pass
};

// Prints a progress line to stderr ("outbox_bench: ...").
void note(const std::string& text);

// ---------------------------------------------------------------------------
// Blocking libpq, for producers and checks (never on the sink's thread).

struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_result = std::unique_ptr<PGresult, result_deleter>;

class pg {
 public:
  explicit pg(const std::string& conninfo);
  ~pg();
  pg(const pg&) = delete;
  pg& operator=(const pg&) = delete;

  // Throws std::runtime_error on any error.
  pg_result exec(const std::string& sql, const std::vector<std::string>& params = {});
  void prepare(const std::string& name, const std::string& sql);
  pg_result exec_prepared(const std::string& name, const std::vector<std::string>& params);
  // nullopt: SQL NULL.
  pg_result exec_prepared_nullable(const std::string& name, const std::vector<std::optional<std::string>>& params);
  std::int64_t scalar(const std::string& sql, const std::vector<std::string>& params = {});
  [[nodiscard]] int backend_pid() const { return PQbackendPID(conn_); }

 private:
  pg_result check(PGresult* r, const std::string& what);
  PGconn* conn_ = nullptr;
};

[[nodiscard]] std::string value(const pg_result& r, int row, int col);

// ---------------------------------------------------------------------------
// Processes.

struct proc_sample {
  double cpu_seconds = 0;  // user + system
  double hwm_mb = 0;       // VmHWM: peak resident set size so far
  double rss_mb = 0;       // VmRSS
};
// Reads /proc/<pid>/stat and /proc/<pid>/status; zeros when the process is gone.
[[nodiscard]] proc_sample sample_process(pid_t pid);

class child_process {
 public:
  // Starts `exe args...` with exactly `env`; stdout and stderr go to `output_path`.
  child_process(const std::string& exe, const std::vector<std::string>& args, const std::vector<std::string>& env,
                const std::string& output_path);
  ~child_process();  // SIGKILLs a child still running
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  struct exit_report {
    int status = 0;  // raw wait status
    bool exited_ok = false;
    bool killed = false;  // needed SIGKILL after the grace period
    double cpu_seconds = 0;
    // ru_maxrss. Beware: posix_spawn (vfork-like) children report the parent's
    // RSS from before exec when it is larger, so prefer vm_hwm_mb.
    double max_rss_mb = 0;
    double vm_hwm_mb = 0;     // VmHWM: highest seen while waiting for the exit
    double stop_seconds = 0;  // SIGTERM to exit
  };

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool running();
  // SIGTERM, waits up to `grace`, then SIGKILL.
  exit_report terminate(std::chrono::seconds grace);
  // Waits for a normal exit up to `limit`, then SIGKILL.
  exit_report wait(std::chrono::seconds limit);
  [[nodiscard]] const std::string& output_path() const { return output_; }
  [[nodiscard]] std::string output_tail(std::size_t lines = 20) const;

 private:
  exit_report reap(std::chrono::steady_clock::time_point deadline, bool kill_after);
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string output_;
  std::optional<exit_report> report_;
};

// The current environment without OUTBOX_* and DATABASE_URL, plus `extra`.
[[nodiscard]] std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra);

// What a container of the image starts with, then `settings` (the image's ENV
// and the scenario's): the base image's PATH and the image user's HOME. Of this
// machine's environment only libpq's connection variables (PGHOST, PGPORT,
// PGUSER, PGPASSWORD, PGDATABASE) pass, standing in for the host part of a
// DATABASE_URL. A development machine's SSL_CERT_FILE, for one, made the
// dispatcher parse the whole CA bundle at start (1.3 MB of RSS, about 25 ms of
// CPU) where the image reads the hashed directory lazily.
[[nodiscard]] std::vector<std::string> container_environment(
    const std::vector<std::pair<std::string, std::string>>& settings);

// CPU seconds of one PostgreSQL cluster: the postmaster and all its children
// (backends, walwriter, checkpointer, autovacuum...). A child that exits keeps
// the CPU time last seen for it, so sample often (refresh()) when backends come
// and go. Thread-safe.
class cluster_cpu {
 public:
  explicit cluster_cpu(pid_t any_backend);
  void refresh();
  [[nodiscard]] double seconds();  // refreshes first
  // Per process: CPU seconds since mark() (processes born later count from 0).
  void mark();
  [[nodiscard]] std::map<pid_t, double> since_mark();

 private:
  pid_t postmaster_ = -1;
  std::mutex mutex_;
  std::map<pid_t, double> seen_;
  std::map<pid_t, double> base_;
};

// Machine-wide busy and total CPU time from /proc/stat, in seconds.
struct machine_cpu {
  double busy = 0;
  double total = 0;
  static machine_cpu now();
};

// This process (sink threads + producers): user + system seconds.
[[nodiscard]] double self_cpu_seconds();

// Milliseconds one core takes for a fixed piece of work (SHA-256 of 16 MB, the
// best of three), recorded at start and end of every run: a figure from a run
// whose reference is slower than usual was taken on a slower machine.
[[nodiscard]] double cpu_reference_ms();

[[nodiscard]] double load_average_1m();
// CPU time the hypervisor gave other guests while this one wanted it (/proc/stat
// steal, all cores): a run that lost much of it says so beside its figures.
[[nodiscard]] double machine_steal_seconds();

// ---------------------------------------------------------------------------

// Text helpers for the summary tables.
[[nodiscard]] std::string fmt(double v, int decimals = 0);  // "n/a" for NaN; 12,345 for big counts
// j[a] or j[a][b] as a number; NaN when absent.
[[nodiscard]] double num(const nlohmann::json& j, const char* a, const char* b = nullptr);
// Left-aligned columns separated by two spaces; rows[0] is the header, ruled with dashes.
[[nodiscard]] std::string format_table(const std::vector<std::vector<std::string>>& rows);

// Nearest-rank percentile of an ascending-sorted vector (p in [0, 100]).
[[nodiscard]] double percentile(const std::vector<double>& sorted, double p);
[[nodiscard]] double seconds_between(steady::time_point a, steady::time_point b);
[[nodiscard]] double ms_between(steady::time_point a, steady::time_point b);

// The scenarios; each returns its figures as a JSON object.
// drain: insert every row first, then start the dispatcher and time it alone.
// SELECT pg_stat_statements_reset() (creating the extension): false when the
// library is not loaded (shared_preload_libraries).
bool reset_statements(pg& admin);

nlohmann::json run_throughput(const options& o, bool drain);
nlohmann::json run_latency(const options& o);
nlohmann::json run_trigger_cost(const options& o);
// wake-modes: pgbench at o.wake_clients for each wake mode with the dispatcher delivering, then latency per mode.
nlohmann::json run_wake_modes(const options& o);
void print_wake_modes_summary(const nlohmann::json& result);
// fleet: drain with 1, 2 and 4 dispatcher processes (options::fleet_sizes).
nlohmann::json run_fleet(const options& o);
void print_fleet_summary(const nlohmann::json& result);
// ceiling: the engine's claim and settle statements alone on one libpq connection (no dispatcher).
nlohmann::json run_ceiling(const options& o);
// The bare TLS exchange alone, no dispatcher (bench/http_floor.cpp).
nlohmann::json run_http_floor(const options& o);
// batched: throughput and drain with Meta rows sent in batches of up to o.meta_batch events.
nlohmann::json run_batched(const options& o);
void print_batched_summary(const nlohmann::json& result);
// crm: drain and latency of one signed webhook destination at each o.crm_concurrency (bench/crm_concurrency.cpp).
nlohmann::json run_crm(const options& o);
nlohmann::json run_chaos(const options& o);
void print_chaos_summary(const nlohmann::json& result);
nlohmann::json run_paused_backlog(const options& o);
// destinations: one registry destination, then 1,000 (bench/many_destinations.cpp).
nlohmann::json run_many_destinations(const options& o);
void print_many_destinations_summary(const nlohmann::json& result);
void print_paused_backlog_summary(const nlohmann::json& result);
nlohmann::json run_migration_stall(const options& o);
void print_migration_stall_summary(const nlohmann::json& result);
void print_crm_summary(const nlohmann::json& result);

}  // namespace outbox::bench

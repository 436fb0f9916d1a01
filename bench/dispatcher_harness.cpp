#include "bench/dispatcher_harness.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "bench/lean_sink.hpp"
#include "bench/receiver_process.hpp"
#include "bench/workload.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dockerfile.hpp"

namespace outbox::bench {

using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {
// The Dockerfile's runtime ENV (tests/support/dockerfile.hpp).
std::vector<std::pair<std::string, std::string>> image_environment() {
  return test::image_environment(test::read_whole_file(OUTBOX_SOURCE_DIR "/Dockerfile"));
}

std::unique_ptr<event_sink> make_sink(const options& o, const test::test_ca& ca, const std::string& label) {
  if (o.sink == "receiver")
    return std::make_unique<receiver_process>(ca.issue(), webhook_secret_for(o),
                                              o.log_dir + "/receiver-" + label + ".log");
  return std::make_unique<lean_sink>(ca.issue(), o.sink_threads, sink_protocol(o));
}
}  // namespace

dispatcher_setup::dispatcher_setup(const options& o, const std::string& label)
    : opts_(o), label_(label), sink_(make_sink(o, ca_, label)) {}

void dispatcher_setup::set_wake_mode(const std::string& mode) {
  pg conn(db_.conninfo());
  (void)conn.exec("SELECT outbox_set_wake_mode($1, 'outbox_bench')", {mode});
}

long long dispatcher_setup::listening_backends() {
  pg conn(db_.conninfo());
  return conn.scalar(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'");
}

namespace {
void set_niceness(pid_t pid, int nice) {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(pid), nice) != 0)
    throw std::runtime_error("--dispatcher-nice " + std::to_string(nice) + ": " + std::strerror(errno));
}
}  // namespace

void dispatcher_setup::start(bool wait, const std::string& label) {
  if (proc_ && proc_->running()) throw std::logic_error("dispatcher_setup::start: the dispatcher still runs");
  if (proc_) {
    // The previous dispatcher's LISTEN backend must be gone, or wait_ready would see it.
    const auto deadline = steady::now() + 10s;
    while (listening_backends() > 0 && steady::now() < deadline) std::this_thread::sleep_for(10ms);
  }
  if (!opts_.db_wake_mode.empty()) set_wake_mode(opts_.db_wake_mode);
  // The image's own ENV first (its binary, as the image runs it, in a container's
  // environment); the scenario's settings override it.
  std::vector<std::pair<std::string, std::string>> env = image_environment();
  const auto set = [&env](const std::string& k, const std::string& v) {
    const auto same = std::find_if(env.begin(), env.end(), [&k](const auto& kv) { return kv.first == k; });
    if (same != env.end()) same->second = v;
    else env.emplace_back(k, v);
  };
  set("DATABASE_URL", db_.conninfo());
  set("OUTBOX_LOG_LEVEL", "warn");
  set("OUTBOX_METRICS_ADDRESS", "");
  set("OUTBOX_EXTRA_CA_FILE", ca_.cert_pem_file().string());
  for (const auto& kv : destination_env(opts_, *sink_)) env.push_back(kv);
  if (opts_.claim_batch) env.emplace_back("OUTBOX_CLAIM_BATCH", std::to_string(*opts_.claim_batch));
  if (opts_.max_in_flight) env.emplace_back("OUTBOX_MAX_IN_FLIGHT", std::to_string(*opts_.max_in_flight));
  if (!opts_.wake.empty()) env.emplace_back("OUTBOX_WAKE_MODE", opts_.wake);
  for (const auto& [k, v] : opts_.extra_env) set(k, v);  // --env wins, also over OUTBOX_LOG_LEVEL=warn
  settings_ = json::object();
  for (const auto& [k, v] : env) {
    if (k.ends_with("SECRET") || k.ends_with("TOKEN")) settings_[k] = "***";
    else if (k != "OUTBOX_EXTRA_CA_FILE" && !k.ends_with("URL")) settings_[k] = v;
  }
  if (!opts_.db_wake_mode.empty()) settings_["database wake mode"] = opts_.db_wake_mode;
  const std::string name = label.empty() ? label_ : label;
  proc_ = std::make_unique<child_process>(opts_.dispatcher, std::vector<std::string>{"run"}, container_environment(env),
                                          opts_.log_dir + "/dispatcher-" + name + ".log");
  others_.clear();
  for (int i = 1; i < opts_.dispatchers; ++i) {
    auto own = env;
    own.emplace_back("OUTBOX_INSTANCE_NAME", "bench-" + std::to_string(i));
    others_.push_back(
        std::make_unique<child_process>(opts_.dispatcher, std::vector<std::string>{"run"}, container_environment(own),
                                        opts_.log_dir + "/dispatcher-" + name + "-" + std::to_string(i) + ".log"));
  }
  if (opts_.dispatchers > 1) settings_["dispatchers"] = opts_.dispatchers;
  if (opts_.dispatcher_nice) {
    for (const pid_t pid : other_pids()) set_niceness(pid, *opts_.dispatcher_nice);
    set_niceness(proc_->pid(), *opts_.dispatcher_nice);
    settings_["niceness"] = *opts_.dispatcher_nice;
  }
  if (wait) {
    wait_ready();
    rss_ready_mb_ = sample_process(proc_->pid()).rss_mb;
  }
}

std::vector<pid_t> dispatcher_setup::other_pids() const {
  std::vector<pid_t> pids;
  for (const auto& p : others_) pids.push_back(p->pid());
  return pids;
}

double window::dispatchers_cpu() const {
  double cpu = sample_process(dispatcher_).cpu_seconds;
  for (const pid_t p : others) cpu += sample_process(p).cpu_seconds;
  return cpu;
}

void dispatcher_setup::wait_ready() {
  pg conn(db_.conninfo());
  const bool poll = opts_.wake == "poll";
  const std::string probe =
      poll ? "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
           : "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'";
  const auto deadline = steady::now() + 20s;
  while (conn.scalar(probe) == 0) {
    if (!proc_->running()) failed("the dispatcher exited during start-up");
    if (steady::now() > deadline) failed("the dispatcher did not start listening within 20 s");
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(100ms);  // let the catch-up claim after LISTEN finish
}

void dispatcher_setup::failed(const std::string& what) {
  throw std::runtime_error(what + "; last lines of " + proc_->output_path() + ":\n" + proc_->output_tail());
}

namespace {
constexpr const char* wal_position_sql = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn";
constexpr const char* checkpoints_sql = "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter";
}  // namespace

void window::begin(pg* conn) {
  if (conn) {
    wal0 = conn->scalar(wal_position_sql);
    checkpoints0 = conn->scalar(checkpoints_sql);
  }
  d0 = dispatchers_cpu();
  if (sink > 0) sink0 = sample_process(sink).cpu_seconds;
  cluster_.mark();
  pg0 = cluster_.seconds();
  self0 = self_cpu_seconds();
  m0 = machine_cpu::now();
  t0 = steady::now();
}

void window::end(pg& conn) {
  const auto s = sample_process(dispatcher_);
  d1 = dispatchers_cpu();
  if (sink > 0) sink1 = sample_process(sink).cpu_seconds;
  hwm = s.hwm_mb;
  pg1 = cluster_.seconds();
  const auto per_pid = cluster_.since_mark();
  std::map<pid_t, std::string> role;
  const auto r = conn.exec(
      "SELECT pid, backend_type, coalesce(query, ''), coalesce(application_name, '') "
      "FROM pg_stat_activity");
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    const auto pid = static_cast<pid_t>(std::stol(value(r, i, 0)));
    const std::string type = value(r, i, 1), query = value(r, i, 2), app = value(r, i, 3);
    std::string name = type;
    // The dispatcher names its connections (dispatcher/engine/db_link.cpp); a
    // connection's last query alone once filed the claim connection under
    // maintenance. The queries below sort the rest (older dispatchers, the
    // listener, producers).
    constexpr std::string_view ours = "outbox-dispatcher ";
    if (pid == conn.backend_pid()) name = "bench connection (inserts, polling)";
    else if (type != "client backend") name = type;
    else if (app.starts_with(ours) && app.size() > ours.size()) name = "dispatcher " + app.substr(ours.size());
    else if (query.starts_with("LISTEN") || query == "SELECT 1") name = "dispatcher listener";
    else if (query.find("WITH picked AS") != std::string::npos || query.find("least(") != std::string::npos)
      name = "dispatcher claim";
    else if (query.find("WITH s AS") != std::string::npos) name = "dispatcher settle";
    else if (query.find("enqueue_event_delivery") != std::string::npos) name = "producers (enqueue)";
    else if (query.find("lease_expires_at") != std::string::npos) name = "dispatcher maintenance";
    else name = "other client backend";
    role[pid] = name;
  }
  if (wal0 >= 0) {
    wal1 = conn.scalar(wal_position_sql);
    checkpoints1 = conn.scalar(checkpoints_sql);
  }
  by_role = json::object();
  for (const auto& [pid, cpu] : per_pid) {
    const auto it = role.find(pid);
    const std::string name = it == role.end() ? "exited (autovacuum workers, ...)" : it->second;
    by_role[name] = (by_role.contains(name) ? by_role[name].get<double>() : 0.0) + cpu;
  }
  self1 = self_cpu_seconds();
  m1 = machine_cpu::now();
  t1 = steady::now();
}

json window::figures(double rows) const {
  const double wall = seconds_between(t0, t1);
  json wal = nullptr;
  if (wal0 >= 0)
    wal = {{"wal_bytes_per_row", rows > 0 ? static_cast<double>(wal1 - wal0) / rows : 0.0},
           {"checkpoints_completed", checkpoints1 - checkpoints0}};
  return {{"window_seconds", wall},
          {"postgres_wal", wal},
          {"dispatcher_cpu_seconds", d1 - d0},
          {"dispatcher_cpu_us_per_row", rows > 0 ? (d1 - d0) / rows * 1e6 : 0.0},
          {"dispatcher_cores", wall > 0 ? (d1 - d0) / wall : 0.0},
          {"postgres_cpu_seconds", pg1 - pg0},
          {"postgres_cores", wall > 0 ? (pg1 - pg0) / wall : 0.0},
          {"postgres_cpu_seconds_by_process", by_role},
          {"bench_process_cpu_seconds", self1 - self0},
          {"receiver_process_cpu_seconds", sink > 0 ? json(sink1 - sink0) : json(nullptr)},
          {"machine_busy_cores", wall > 0 ? (m1.busy - m0.busy) / wall : 0.0},
          {"machine_cores", static_cast<double>(std::thread::hardware_concurrency())}};
}

json state_counts(pg& conn) {
  json states = json::object();
  const auto r = conn.exec("SELECT state, count(*) FROM event_delivery GROUP BY state ORDER BY 1");
  for (int i = 0; i < PQntuples(r.get()); ++i) states[value(r, i, 0)] = std::stoll(value(r, i, 1));
  return states;
}

json log_problems(const std::string& path) {
  json messages = json::object();
  std::size_t lines = 0, deadlocks = 0;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.find(R"("level":"warn")") == std::string::npos && line.find(R"("level":"error")") == std::string::npos)
      continue;
    ++lines;
    if (line.find("deadlock detected") != std::string::npos) ++deadlocks;
    const auto at = line.find(R"("msg":")");
    const std::string msg = at == std::string::npos ? "?" : line.substr(at + 7, line.find('"', at + 7) - at - 7);
    messages[msg] = messages.value(msg, 0) + 1;
  }
  return {{"lines", lines}, {"deadlocks", deadlocks}, {"messages", messages}};
}

std::string describe_log_problems(const json& problems) {
  if (problems.value("lines", 0) == 0) return "none";
  std::string text = std::to_string(problems.value("lines", 0)) + ":";
  for (const auto& [msg, n] : problems["messages"].items()) {
    text += " " + msg + " x" + std::to_string(n.get<int>()) + ",";
  }
  text.pop_back();
  const int deadlocks = problems.value("deadlocks", 0);
  if (deadlocks > 0) text += " (deadlocks: " + std::to_string(deadlocks) + ")";
  return text;
}

json finish(dispatcher_setup& s, pg& conn, window& w, const std::vector<sink_hit>& hits, std::size_t expected_rows) {
  double others_cpu = 0;
  for (auto& other : s.others()) others_cpu += other->terminate(30s).cpu_seconds;
  const auto stop = s.proc().terminate(30s);
  std::unordered_set<std::string> keys;
  std::size_t unkeyed = 0;
  for (const auto& h : hits) {
    if (h.key.empty()) ++unkeyed;
    keys.insert(h.key);
  }
  json out;
  out["requests"] = s.sink().requests();
  out["events_received"] = hits.size();
  out["events_per_request"] =
      s.sink().requests() ? static_cast<double>(hits.size()) / static_cast<double>(s.sink().requests()) : 0.0;
  out["distinct_keys"] = keys.size();
  out["duplicates"] = hits.size() - keys.size();
  out["requests_without_key"] = unkeyed;
  out["missing"] = expected_rows > keys.size() ? expected_rows - keys.size() : 0;
  out["states"] = state_counts(conn);
  out["attempt_log_rows"] = conn.scalar("SELECT count(*) FROM event_delivery_attempt");
  out["rows_with_retries"] = conn.scalar("SELECT count(*) FROM event_delivery WHERE attempts > 1");
  if (s.sink().connections() > 0) out["sink_tls_sessions"] = s.sink().connections();
  out["requests_refused_by_receiver"] = s.sink().refused();
  out["dispatcher_cpu_seconds_total"] = stop.cpu_seconds + others_cpu;
  out["dispatchers"] = 1 + s.others().size();
  // VmHWM of the dispatcher's own address space (peak resident set since exec),
  // before SIGTERM and during shutdown. Not ru_maxrss: see child_process.
  out["dispatcher_peak_rss_mb"] = std::max(stop.vm_hwm_mb, w.hwm);
  out["dispatcher_vm_hwm_before_stop_mb"] = w.hwm;
  out["dispatcher_ru_maxrss_mb"] = stop.max_rss_mb;
  out["dispatcher_rss_when_ready_mb"] = s.rss_ready_mb();
  out["dispatcher_exit_ok"] = stop.exited_ok && !stop.killed;
  out["dispatcher_stop_seconds"] = stop.stop_seconds;
  out["dispatcher_settings"] = s.settings();
  out["dispatcher_log"] = s.proc().output_path();
  out["dispatcher_log_problems"] = log_problems(s.proc().output_path());
  return out;
}

}  // namespace outbox::bench

// The two scenarios that run the real `dispatcher run` executable against a
// scratch database and the in-process HTTPS sink: end-to-end throughput and
// commit-to-request latency at a steady offered rate.
#include <algorithm>
#include <atomic>
#include <latch>
#include <mutex>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "bench/lean_sink.hpp"
#include "bench/support.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::bench {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// A signing secret in the Standard Webhooks format, so every request carries an
// HMAC-SHA256 signature as it would in production.
constexpr const char* webhook_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// A realistic conversion event (about 330 bytes as JSON): hashed user data,
// custom data, event time. The lead id is patched in per row.
constexpr const char* payload_template =
    R"({"action_source": "system_generated", "custom_data": {"currency": "EUR", "lead_event_source": "crm", "value": 129.5}, "event_name": "Lead", "event_time": 1760000000, "lead_project_id": 0, "user_data": {"em": "7b17fb0bd173f625b58636fb796407c22b3d16fc78302d79f0fd30c2fc2fc068", "ph": "254aa248acb47dd654ca3ea53f48c2c26d641d23d7e2e93a1ec56258df7674c4"}})";

std::string payload_for(std::int64_t lead) {
  std::string p = payload_template;
  const std::string needle = "\"lead_project_id\": 0";
  p.replace(p.find(needle), needle.size(), "\"lead_project_id\": " + std::to_string(lead));
  return p;
}

// The scratch database, the sink and the dispatcher process of one scenario.
class dispatcher_setup {
 public:
  dispatcher_setup(const options& o, const std::string& label)
      : opts_(o), label_(label), sink_(ca_.issue(), o.sink_threads) {}

  // Spawns the dispatcher; waits until it listens unless `wait` is false.
  void start(bool wait = true) {
    std::vector<std::pair<std::string, std::string>> env{
        {"DATABASE_URL", db_.conninfo()},
        {"OUTBOX_LOG_LEVEL", "warn"},
        {"OUTBOX_METRICS_ADDRESS", ""},
        {"OUTBOX_EXTRA_CA_FILE", ca_.cert_pem_file().string()},
        {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", sink_.url("/hook")},
    };
    if (opts_.sign) env.emplace_back("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET", webhook_secret);
    if (opts_.claim_batch) env.emplace_back("OUTBOX_CLAIM_BATCH", std::to_string(*opts_.claim_batch));
    if (opts_.max_in_flight) env.emplace_back("OUTBOX_MAX_IN_FLIGHT", std::to_string(*opts_.max_in_flight));
    if (opts_.concurrency)
      env.emplace_back("OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", std::to_string(*opts_.concurrency));
    if (!opts_.wake.empty()) env.emplace_back("OUTBOX_WAKE_MODE", opts_.wake);
    for (const auto& kv : opts_.extra_env) env.push_back(kv);
    for (const auto& [k, v] : env) {
      if (k.ends_with("SECRET")) settings_[k] = "***";
      else if (k.starts_with("OUTBOX_") && k != "OUTBOX_EXTRA_CA_FILE" && k != "OUTBOX_DEST__WEBHOOK__DEFAULT__URL")
        settings_[k] = v;
    }
    proc_ = std::make_unique<child_process>(opts_.dispatcher, std::vector<std::string>{"run"}, child_environment(env),
                                            opts_.log_dir + "/dispatcher-" + label_ + ".log");
    if (wait) {
      wait_ready();
      rss_ready_mb_ = sample_process(proc_->pid()).rss_mb;
    }
  }

  // The dispatcher is ready once its listener ran LISTEN (poll mode: once it connected).
  void wait_ready() {
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

  [[noreturn]] void failed(const std::string& what) {
    throw std::runtime_error(what + "; last lines of " + proc_->output_path() + ":\n" + proc_->output_tail());
  }

  json settings() const { return settings_; }
  [[nodiscard]] double rss_ready_mb() const { return rss_ready_mb_; }

  test::scratch_database& db() { return db_; }
  lean_sink& sink() { return sink_; }
  child_process& proc() { return *proc_; }

 private:
  const options& opts_;
  std::string label_;
  test::scratch_database db_;
  test::test_ca ca_{"outbox bench CA"};
  lean_sink sink_;
  std::unique_ptr<child_process> proc_;
  json settings_ = json::object();
  double rss_ready_mb_ = 0;
};

// Resource figures over a measurement window.
struct window {
  window(pid_t dispatcher, cluster_cpu& cluster) : dispatcher_(dispatcher), cluster_(cluster) {}

  void begin() {
    d0 = sample_process(dispatcher_).cpu_seconds;
    cluster_.mark();
    pg0 = cluster_.seconds();
    self0 = self_cpu_seconds();
    m0 = machine_cpu::now();
    t0 = steady::now();
  }
  // `conn` names the PostgreSQL processes by what they did last (pg_stat_activity).
  void end(pg& conn) {
    const auto s = sample_process(dispatcher_);
    d1 = s.cpu_seconds;
    hwm = s.hwm_mb;
    pg1 = cluster_.seconds();
    const auto per_pid = cluster_.since_mark();
    std::map<pid_t, std::string> role;
    const auto r = conn.exec("SELECT pid, backend_type, coalesce(query, '') FROM pg_stat_activity");
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      const auto pid = static_cast<pid_t>(std::stol(value(r, i, 0)));
      const std::string type = value(r, i, 1), query = value(r, i, 2);
      std::string name = type;
      if (pid == conn.backend_pid()) name = "bench connection (inserts, polling)";
      else if (type != "client backend") name = type;
      else if (query.starts_with("LISTEN") || query == "SELECT 1") name = "dispatcher listener";
      else if (query.find("WITH expired AS") != std::string::npos || query.find("least(") != std::string::npos)
        name = "dispatcher claim";
      else if (query.find("WITH s AS") != std::string::npos) name = "dispatcher settle";
      else if (query.find("enqueue_event_delivery") != std::string::npos) name = "producers (enqueue)";
      else if (query.find("lease_expires_at") != std::string::npos) name = "dispatcher maintenance";
      else name = "other client backend";
      role[pid] = name;
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
  json figures(double rows) const {
    const double wall = seconds_between(t0, t1);
    return {{"window_seconds", wall},
            {"dispatcher_cpu_seconds", d1 - d0},
            {"dispatcher_cpu_us_per_row", rows > 0 ? (d1 - d0) / rows * 1e6 : 0.0},
            {"dispatcher_cores", wall > 0 ? (d1 - d0) / wall : 0.0},
            {"postgres_cpu_seconds", pg1 - pg0},
            {"postgres_cores", wall > 0 ? (pg1 - pg0) / wall : 0.0},
            {"postgres_cpu_seconds_by_process", by_role},
            {"bench_process_cpu_seconds", self1 - self0},
            {"machine_busy_cores", wall > 0 ? (m1.busy - m0.busy) / wall : 0.0},
            {"machine_cores", static_cast<double>(std::thread::hardware_concurrency())}};
  }

  pid_t dispatcher_;
  cluster_cpu& cluster_;
  double d0 = 0, d1 = 0, pg0 = 0, pg1 = 0, self0 = 0, self1 = 0, hwm = 0;
  json by_role = json::object();
  machine_cpu m0, m1;
  steady::time_point t0, t1;
};

json state_counts(pg& conn) {
  json states = json::object();
  const auto r = conn.exec("SELECT state, count(*), sum(attempts) FROM event_delivery GROUP BY state ORDER BY 1");
  for (int i = 0; i < PQntuples(r.get()); ++i) states[value(r, i, 0)] = std::stoll(value(r, i, 1));
  return states;
}

json finish(dispatcher_setup& s, pg& conn, window& w, const std::vector<lean_sink::hit>& hits,
            std::size_t expected_rows) {
  const auto stop = s.proc().terminate(30s);
  std::unordered_set<std::string> keys;
  std::size_t unkeyed = 0;
  for (const auto& h : hits) {
    if (h.key.empty()) ++unkeyed;
    keys.insert(h.key);
  }
  json out;
  out["requests"] = hits.size();
  out["distinct_keys"] = keys.size();
  out["duplicates"] = hits.size() - keys.size();
  out["requests_without_key"] = unkeyed;
  out["missing"] = expected_rows > keys.size() ? expected_rows - keys.size() : 0;
  out["states"] = state_counts(conn);
  out["attempt_log_rows"] = conn.scalar("SELECT count(*) FROM event_delivery_attempt");
  out["rows_with_retries"] = conn.scalar("SELECT count(*) FROM event_delivery WHERE attempts > 1");
  out["sink_tls_sessions"] = s.sink().connections();
  out["dispatcher_cpu_seconds_total"] = stop.cpu_seconds;
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
  return out;
}

}  // namespace

json run_throughput(const options& o, bool drain) {
  const std::string name = drain ? "drain" : "throughput";
  note(name + ": " + std::to_string(o.rows) + " rows, multi-row inserts of " + std::to_string(o.insert_batch) +
       (drain ? ", all inserted before the dispatcher starts" : "") + " (load " + std::to_string(load_average_1m()) +
       ")");
  dispatcher_setup s(o, name);
  pg conn(s.db().conninfo());
  cluster_cpu cluster(conn.backend_pid());
  conn.prepare("ins",
               "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload) "
               "SELECT g, 'webhook', 'Lead', outbox_idempotency_key(g, 'webhook', 'Lead'), "
               "       jsonb_set($3::jsonb, '{lead_project_id}', to_jsonb(g)) "
               "FROM generate_series($1::bigint, $2::bigint) AS g");
  const std::string payload = payload_for(0);
  const auto insert_all = [&](steady::time_point& first_commit) {
    for (std::int64_t from = 1; from <= o.rows; from += o.insert_batch) {
      const std::int64_t to = std::min<std::int64_t>(o.rows, from + o.insert_batch - 1);
      (void)conn.exec_prepared("ins", {std::to_string(from), std::to_string(to), payload});
      if (from == 1) first_commit = steady::now();
    }
  };

  steady::time_point t_start{}, t_first_commit{};
  double insert_seconds = 0;
  std::optional<window> w;
  const double load_before = load_average_1m();
  if (drain) {
    const auto t_insert = steady::now();
    insert_all(t_first_commit);
    insert_seconds = seconds_between(t_insert, steady::now());
    (void)conn.exec("VACUUM ANALYZE event_delivery");
    t_start = steady::now();
    s.start(false);  // the clock runs from the spawn: start-up is part of the drain
    w.emplace(s.proc().pid(), cluster);
    w->begin();
    w->t0 = t_start;
  } else {
    s.start();
    w.emplace(s.proc().pid(), cluster);
    w->begin();
    t_start = w->t0;
    insert_all(t_first_commit);
    insert_seconds = seconds_between(t_start, steady::now());
  }

  // Wait for the sink to see every row (free), then for the database to record the last one.
  const auto limit = 60s + std::chrono::seconds(o.rows / 500);
  const auto deadline = t_start + limit;
  const auto expected = static_cast<std::size_t>(o.rows);
  while (s.sink().count() < expected) {
    if (steady::now() > deadline) s.failed("only " + std::to_string(s.sink().count()) + " of " +
                                           std::to_string(o.rows) + " requests arrived in time");
    if (!s.proc().running()) s.failed("the dispatcher exited");
    std::this_thread::sleep_for(1ms);
  }
  const auto t_all_requested = steady::now();
  while (conn.scalar("SELECT (SELECT count(*) FROM event_delivery WHERE state = 'pending') + "
                     "(SELECT count(*) FROM event_delivery WHERE state = 'sending')") > 0) {
    if (steady::now() > deadline + 30s) s.failed("rows still pending or sending long after every request arrived");
    std::this_thread::sleep_for(1ms);
  }
  w->end(conn);
  const auto t_sent = w->t1;

  const auto hits = s.sink().hits();
  steady::time_point first_hit = hits.empty() ? t_start : hits.front().at, last_hit = first_hit;
  for (const auto& h : hits) {
    first_hit = std::min(first_hit, h.at);
    last_hit = std::max(last_hit, h.at);
  }

  json out = finish(s, conn, *w, hits, expected);
  const double e2e = seconds_between(t_start, t_sent);
  out["rows"] = o.rows;
  out["insert_batch"] = o.insert_batch;
  out["load_average_before"] = load_before;
  out[drain ? "seconds_spawn_to_last_sent" : "seconds_first_insert_to_last_sent"] = e2e;
  out["rows_per_second"] = static_cast<double>(o.rows) / e2e;
  out["insert_seconds"] = insert_seconds;
  out["insert_rows_per_second"] = static_cast<double>(o.rows) / insert_seconds;
  if (!drain) out["first_commit_ms"] = ms_between(t_start, t_first_commit);
  out["first_request_ms"] = ms_between(t_start, first_hit);
  out["last_request_seconds"] = seconds_between(t_start, last_hit);
  out["request_phase_rows_per_second"] =
      hits.size() > 1 ? static_cast<double>(hits.size() - 1) / seconds_between(first_hit, last_hit) : 0.0;
  out["all_requested_to_last_sent_ms"] = ms_between(t_all_requested, t_sent);
  out["resources"] = w->figures(static_cast<double>(o.rows));
  note(name + ": " + std::to_string(static_cast<long long>(out["rows_per_second"].get<double>())) +
       " rows/s, duplicates " + std::to_string(out["duplicates"].get<std::size_t>()));
  return out;
}

json run_latency(const options& o) {
  note("latency: " + std::to_string(o.rate) + " rows/s offered for " + std::to_string(o.seconds) + " s after " +
       std::to_string(o.warmup) + " s warm-up, " + std::to_string(o.producers) + " producer connections (load " +
       std::to_string(load_average_1m()) + ")");
  dispatcher_setup s(o, "latency");
  s.start();
  pg conn(s.db().conninfo());
  cluster_cpu cluster(conn.backend_pid());
  window w(s.proc().pid(), cluster);
  const auto warm_rows = static_cast<std::size_t>(std::llround(o.warmup * o.rate));
  const auto total = warm_rows + static_cast<std::size_t>(std::llround(o.seconds * o.rate));
  const auto period = std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1.0 / o.rate));
  const double load_before = load_average_1m();

  // Open loop: row i is due at t0 + i/rate whatever happened before. A small pool
  // of producer connections takes rows in order, so one slow commit (WAL flush)
  // does not delay the rows after it, as with concurrent Django workers.
  struct produced {
    std::string key;
    steady::time_point target, call, commit;
  };
  std::vector<produced> rows(total);
  std::atomic<std::size_t> next{0};
  std::latch ready(o.producers);
  std::latch go(1);
  steady::time_point t0{};
  std::mutex failure_mutex;
  std::string failure;
  std::vector<std::thread> producers;
  for (int k = 0; k < o.producers; ++k) {
    producers.emplace_back([&] {
      bool counted = false;
      try {
        pg c(s.db().conninfo());
        // One enqueue per transaction (autocommit), as Django does; the key comes back in the same round trip.
        c.prepare("enq",
                  "SELECT enqueue_event_delivery($1::bigint, 'webhook', 'Lead', $2::jsonb), "
                  "outbox_idempotency_key($1::bigint, 'webhook', 'Lead')");
        ready.count_down();
        counted = true;
        go.wait();
        for (;;) {
          const std::size_t i = next.fetch_add(1);
          if (i >= total) break;
          auto& r = rows[i];
          r.target = t0 + period * static_cast<long>(i);
          std::this_thread::sleep_until(r.target);
          if (i == warm_rows) w.begin();
          const auto lead = static_cast<std::int64_t>(i + 1);
          r.call = steady::now();
          const auto res = c.exec_prepared("enq", {std::to_string(lead), payload_for(lead)});
          r.commit = steady::now();
          r.key = value(res, 0, 1);
        }
      } catch (const std::exception& e) {
        const std::lock_guard lock{failure_mutex};
        failure = e.what();
        next = total;
        if (!counted) ready.count_down();
      }
    });
  }
  ready.wait();
  t0 = steady::now() + 20ms;
  go.count_down();
  for (auto& t : producers) t.join();
  if (!failure.empty()) throw std::runtime_error("latency producer: " + failure);
  const auto t_produced = steady::now();
  const auto deadline = t_produced + 15s;
  while (s.sink().count() < total && steady::now() < deadline) std::this_thread::sleep_for(1ms);
  w.end(conn);

  const auto hits = s.sink().hits();
  std::unordered_map<std::string, steady::time_point> first_arrival;
  for (const auto& h : hits) first_arrival.emplace(h.key, h.at);  // keeps the first
  std::vector<double> latency, rtt, lag;
  std::size_t missing = 0;
  for (std::size_t i = warm_rows; i < total; ++i) {
    const auto& r = rows[i];
    rtt.push_back(ms_between(r.call, r.commit));
    lag.push_back(ms_between(r.target, r.call));
    const auto it = first_arrival.find(r.key);
    if (it == first_arrival.end()) {
      ++missing;
      continue;
    }
    latency.push_back(ms_between(r.commit, it->second));
  }
  std::sort(latency.begin(), latency.end());
  std::sort(rtt.begin(), rtt.end());
  std::sort(lag.begin(), lag.end());
  steady::time_point last_commit = rows[warm_rows].commit;
  for (std::size_t i = warm_rows; i < total; ++i) last_commit = std::max(last_commit, rows[i].commit);
  const double measured_seconds = seconds_between(rows[warm_rows].target, last_commit);

  json out = finish(s, conn, w, hits, total);
  out["rate_offered"] = o.rate;
  out["rate_achieved"] = static_cast<double>(total - warm_rows) / measured_seconds;
  out["seconds"] = o.seconds;
  out["warmup_seconds"] = o.warmup;
  out["producer_connections"] = o.producers;
  out["load_average_before"] = load_before;
  out["rows_measured"] = total - warm_rows;
  out["rows_not_delivered_in_time"] = missing;
  json lat;
  for (double p : {50.0, 90.0, 95.0, 99.0, 99.9}) {
    lat["p" + (p == 99.9 ? std::string("99.9") : std::to_string(static_cast<int>(p)))] = percentile(latency, p);
  }
  lat["min"] = latency.empty() ? 0.0 : latency.front();
  lat["max"] = latency.empty() ? 0.0 : latency.back();
  lat["mean"] = latency.empty() ? 0.0
                                 : std::accumulate(latency.begin(), latency.end(), 0.0) /
                                       static_cast<double>(latency.size());
  out["commit_to_request_ms"] = lat;
  out["enqueue_round_trip_ms"] = {{"p50", percentile(rtt, 50)}, {"p99", percentile(rtt, 99)}, {"max", rtt.back()}};
  out["schedule_lag_ms"] = {{"p99", percentile(lag, 99)}, {"max", lag.back()}};
  out["resources"] = w.figures(static_cast<double>(total - warm_rows));
  note("latency: p50 " + std::to_string(lat["p50"].get<double>()) + " ms, p99 " +
       std::to_string(lat["p99"].get<double>()) + " ms");
  return out;
}

}  // namespace outbox::bench

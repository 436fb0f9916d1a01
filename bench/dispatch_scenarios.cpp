// The two scenarios that run the real `dispatcher run` executable against a
// scratch database and the in-process HTTPS sink: end-to-end throughput (and
// drain) and commit-to-request latency at a steady offered rate.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <latch>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "bench/dispatcher_harness.hpp"
#include "bench/support.hpp"
#include "bench/workload.hpp"

namespace outbox::bench {

using namespace std::chrono_literals;
using json = nlohmann::json;

json run_throughput(const options& o, bool drain) {
  const std::string name = drain ? "drain" : "throughput";
  note(name + ": " + std::to_string(o.rows) + " " + o.provider + " rows, multi-row inserts of " +
       std::to_string(o.insert_batch) + (drain ? ", all inserted before the dispatcher starts" : "") + " (load " +
       std::to_string(load_average_1m()) + ")");
  dispatcher_setup s(o, name);
  pg conn(s.db().conninfo());
  cluster_cpu cluster(conn.backend_pid());
  const workload rows = workload_for(o);
  conn.prepare("ins", rows.insert_sql);
  const std::string& payload = rows.payload;
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
    if (o.count_statements) (void)reset_statements(conn);
    t_start = steady::now();
    s.start(false);  // the clock runs from the spawn: start-up is part of the drain
    w.emplace(s.proc().pid(), cluster, s.other_pids());
    w->sink = s.sink().process();
    w->begin(&conn);
    w->t0 = t_start;
  } else {
    s.start();
    w.emplace(s.proc().pid(), cluster, s.other_pids());
    w->sink = s.sink().process();
    w->begin(&conn);
    t_start = w->t0;
    insert_all(t_first_commit);
    insert_seconds = seconds_between(t_start, steady::now());
  }

  // Wait for the sink to see every row (free), then for the database to record the last one.
  const auto limit = 60s + std::chrono::seconds(o.rows / 500);
  const auto deadline = t_start + limit;
  const auto expected = static_cast<std::size_t>(o.rows);
  while (s.sink().count() < expected) {
    if (steady::now() > deadline)
      s.failed("only " + std::to_string(s.sink().count()) + " of " + std::to_string(o.rows) +
               " requests arrived in time");
    if (!s.proc().running()) s.failed("the dispatcher exited");
    std::this_thread::sleep_for(1ms);
  }
  const auto t_all_requested = steady::now();
  // Any unfinished row left, from the work index (sql/0007): counting the
  // pending and sending rows read the whole table on every poll, and the
  // harness's own CPU in PostgreSQL was counted in the window (1.6 - 3 us per row).
  while (conn.scalar(
             "SELECT count(*) FROM (SELECT 1 FROM event_delivery WHERE final_state IS NULL LIMIT 1) AS left_over") >
         0) {
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
  out["provider"] = rows.provider;
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
  if (o.provider != "webhook") throw std::invalid_argument("latency sends webhook rows only (--provider webhook)");
  note("latency: " + std::to_string(o.rate) + " rows/s offered for " + std::to_string(o.seconds) + " s after " +
       std::to_string(o.warmup) + " s warm-up, " + std::to_string(o.producers) + " producer connections (load " +
       std::to_string(load_average_1m()) + ")");
  dispatcher_setup s(o, o.db_wake_mode.empty() ? "latency" : "latency-" + o.db_wake_mode);
  s.start();
  pg conn(s.db().conninfo());
  if (o.count_statements) (void)reset_statements(conn);
  cluster_cpu cluster(conn.backend_pid());
  window w(s.proc().pid(), cluster);
  w.sink = s.sink().process();
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
          if (i == warm_rows) w.begin(&c);
          const auto lead = static_cast<std::int64_t>(i + 1);
          r.call = steady::now();
          const auto res = c.exec_prepared("enq", {std::to_string(lead), webhook_payload(lead)});
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
    // Appended: GCC 12 at -O3 prints a false -Wstringop-overflow on `"p" + std::string`.
    lat[std::string("p").append(p == 99.9 ? std::string("99.9") : std::to_string(static_cast<int>(p)))] =
        percentile(latency, p);
  }
  lat["min"] = latency.empty() ? 0.0 : latency.front();
  lat["max"] = latency.empty() ? 0.0 : latency.back();
  lat["mean"] = latency.empty()
                    ? 0.0
                    : std::accumulate(latency.begin(), latency.end(), 0.0) / static_cast<double>(latency.size());
  out["commit_to_request_ms"] = lat;
  out["enqueue_round_trip_ms"] = {{"p50", percentile(rtt, 50)}, {"p99", percentile(rtt, 99)}, {"max", rtt.back()}};
  out["schedule_lag_ms"] = {{"p99", percentile(lag, 99)}, {"max", lag.back()}};
  out["resources"] = w.figures(static_cast<double>(total - warm_rows));
  note("latency: p50 " + std::to_string(lat["p50"].get<double>()) + " ms, p99 " +
       std::to_string(lat["p99"].get<double>()) + " ms");
  return out;
}

}  // namespace outbox::bench

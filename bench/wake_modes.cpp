// wake-modes: what each wake mode (sql/0003_wake_modes.sql) costs the CRM's
// inserts, and how fast rows reach the sink, with the real dispatcher delivering.
//
// For each pgbench client count, each mode in turn (so that a change in the
// machine's background load hits the three alike):
//   none      outbox_set_wake_mode('off'): no trigger; the dispatcher finds rows by polling
//   always    every inserting statement notifies
//   adaptive  statements skip pg_notify while the dispatcher says it is draining
// the mode is set, a dispatcher is started (it reads the mode at start-up; a
// running one re-reads it only on its sweep timer), pgbench runs the enqueue
// load (pgbench_load.hpp), the bench waits until every row is sent, and the
// dispatcher is stopped. Every dispatcher polls every --wake-poll-ms (100 ms),
// in all three modes. Then the latency scenario runs once per mode.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "bench/dispatcher_harness.hpp"
#include "bench/pgbench_load.hpp"
#include "bench/support.hpp"

namespace outbox::bench {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

struct wake_mode {
  const char* name;     // as reported
  const char* db_mode;  // outbox_set_wake_mode's
};
constexpr std::array<wake_mode, 3> wake_modes{{{"none", "off"}, {"always", "always"}, {"adaptive", "adaptive"}}};

constexpr const char* latency_note =
    "insert-to-request: wall-clock time the sink read the request minus the row's created_at (now() of the "
    "enqueue transaction, which pgbench runs as one statement), same machine clock; it includes the enqueue's own "
    "commit with its WAL fsync and any wait for NOTIFY's lock";

std::int64_t micros(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

// Insert-to-request latency, duplicates and missing keys of the rows now in the
// table, against the sink's events from index `first_hit` on.
json delivery_figures(dispatcher_setup& s, pg& conn, std::size_t first_hit) {
  const auto hits = s.sink().hits(first_hit);
  std::unordered_map<std::string, std::int64_t> first_arrival;  // key -> wall clock, microseconds
  for (const auto& h : hits) first_arrival.emplace(h.key, micros(h.wall));
  const auto rows =
      conn.exec("SELECT idempotency_key, (extract(epoch FROM created_at) * 1000000)::bigint FROM event_delivery");
  std::vector<double> latency;
  std::size_t missing = 0;
  std::int64_t first_created = INT64_MAX, worst_created = 0;
  double worst = -1e9;
  for (int i = 0; i < PQntuples(rows.get()); ++i) {
    const std::int64_t created = std::stoll(value(rows, i, 1));
    first_created = std::min(first_created, created);
    const auto it = first_arrival.find(value(rows, i, 0));
    if (it == first_arrival.end()) {
      ++missing;
      continue;
    }
    latency.push_back(static_cast<double>(it->second - created) / 1000.0);
    if (latency.back() > worst) {
      worst = latency.back();
      worst_created = created;
    }
  }
  std::sort(latency.begin(), latency.end());
  json out;
  out["insert_to_request_ms"] = {{"p50", percentile(latency, 50)},
                                 {"p90", percentile(latency, 90)},
                                 {"p99", percentile(latency, 99)},
                                 {"max", latency.empty() ? 0.0 : latency.back()},
                                 // when the slowest row was inserted, seconds after the first row
                                 {"max_inserted_at_s", static_cast<double>(worst_created - first_created) / 1e6}};
  out["events_received"] = hits.size();
  out["duplicates"] = hits.size() - first_arrival.size();
  out["missing"] = missing;
  return out;
}

// One pgbench run in one mode, the dispatcher delivering meanwhile.
json run_one(dispatcher_setup& s, pg& conn, const options& o, const std::string& script, const wake_mode& m,
             int clients) {
  const std::string label = "wake-" + std::string(m.name) + "-c" + std::to_string(clients);
  conn.exec("TRUNCATE event_delivery, event_delivery_attempt");
  conn.exec("CHECKPOINT");
  s.set_wake_mode(m.db_mode);
  s.start(true, label);
  const std::size_t first_hit = s.sink().count();
  const double cpu0 = sample_process(s.proc().pid()).cpu_seconds;

  json r = run_enqueue_pgbench(o, s.db(), conn, script, clients, o.wake_seconds, label);
  const auto t_end = steady::now();
  const auto rows = static_cast<std::size_t>(conn.scalar("SELECT count(*) FROM event_delivery"));
  const auto deadline = t_end + 60s + std::chrono::seconds(rows / 500);
  const auto undelivered = [&] { return conn.scalar("SELECT count(*) FROM event_delivery WHERE state <> 'sent'"); };
  while (s.sink().count() - first_hit < rows || undelivered() > 0) {
    if (steady::now() > deadline) break;  // reported below
    if (!s.proc().running()) s.failed("the dispatcher exited");
    std::this_thread::sleep_for(5ms);
  }
  r["mode"] = m.name;
  r["rows"] = rows;
  r["drain_seconds_after_pgbench"] = seconds_between(t_end, steady::now());
  r["undelivered"] = undelivered();
  r["dispatcher_cpu_seconds"] = sample_process(s.proc().pid()).cpu_seconds - cpu0;
  const auto stop = s.proc().terminate(30s);
  r["dispatcher_exit_ok"] = stop.exited_ok && !stop.killed;
  r["dispatcher_log"] = s.proc().output_path();
  r["dispatcher_log_problems"] = log_problems(s.proc().output_path());
  r.update(delivery_figures(s, conn, first_hit));
  note(label + ": " + fmt(num(r, "inserts_per_second")) + " inserts/s, insert-to-request p50 " +
       fmt(num(r, "insert_to_request_ms", "p50"), 1) + " ms, p99 " + fmt(num(r, "insert_to_request_ms", "p99"), 1) +
       " ms");
  return r;
}

// "Lock:object 88%, LWLock:WALWrite 6%": the `n` most sampled wait events.
std::string top_waits(const json& waits, std::size_t n) {
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [k, v] : waits.items()) sorted.emplace_back(v.get<double>(), k);
  std::sort(sorted.rbegin(), sorted.rend());
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < n; ++i)
    text += (i ? ", " : "") + sorted[i].second + " " + fmt(sorted[i].first * 100) + "%";
  return text;
}

}  // namespace

json run_wake_modes(const options& o) {
  options d = o;           // the dispatchers' settings in every mode
  d.provider = "webhook";  // the pgbench script enqueues webhook rows
  bool poll_given = false;
  for (const auto& [k, v] : o.extra_env) poll_given = poll_given || k == "OUTBOX_POLL_INTERVAL_MS";
  if (!poll_given) d.extra_env.emplace_back("OUTBOX_POLL_INTERVAL_MS", std::to_string(o.wake_poll_ms));
  note("wake modes: pgbench at " + std::to_string(o.wake_clients.size()) + " client counts x 3 modes, " +
       std::to_string(o.wake_seconds) + " s each, dispatcher delivering (load " + fmt(load_average_1m(), 2) + ")");

  json out;
  out["load_average_before"] = load_average_1m();
  out["seconds_per_run"] = o.wake_seconds;
  out["pgbench_threads"] = o.pgbench_threads;
  out["note"] = latency_note;
  json runs = json::array();
  {
    dispatcher_setup s(d, "wake-modes");
    pg conn(s.db().conninfo());
    const std::string script = write_enqueue_script(o);
    out["script"] = script;
    for (int clients : o.wake_clients) {
      for (const auto& m : wake_modes) runs.push_back(run_one(s, conn, d, script, m, clients));
    }
    out["dispatcher_settings"] = s.settings();
  }
  for (auto& r : runs) {
    for (const auto& base : runs) {
      if (base["mode"] == "none" && base["clients"] == r["clients"]) {
        r["ratio_to_none"] = num(r, "inserts_per_second") / num(base, "inserts_per_second");
      }
    }
  }
  out["runs"] = runs;

  json latency = json::object();
  for (const auto& m : wake_modes) {
    options l = d;
    l.db_wake_mode = m.db_mode;
    latency[m.name] = run_latency(l);
  }
  out["latency"] = latency;
  out["load_average_after"] = load_average_1m();
  return out;
}

void print_wake_modes_summary(const json& w) {
  std::vector<std::vector<std::string>> rows{{"clients", "mode", "inserts/s", "vs none", "pgbench avg",
                                              "insert-to-request p50 / p99", "top wait events (pgbench backends)",
                                              "undelivered", "dups", "dispatcher warnings"}};
  for (const auto& r : w["runs"]) {
    rows.push_back(
        {fmt(num(r, "clients")), r["mode"].get<std::string>(), fmt(num(r, "inserts_per_second")),
         fmt(num(r, "ratio_to_none"), 2) + "x", fmt(num(r, "latency_average_ms"), 1) + " ms",
         fmt(num(r, "insert_to_request_ms", "p50"), 1) + " / " + fmt(num(r, "insert_to_request_ms", "p99"), 1) + " ms",
         top_waits(r["wait_events"], 2), fmt(num(r, "undelivered")) + " (missing " + fmt(num(r, "missing")) + ")",
         fmt(num(r, "duplicates")), describe_log_problems(r.value("dispatcher_log_problems", json::object()))});
  }
  std::string text = "\nwake modes, " + fmt(num(w, "seconds_per_run")) +
                     " s of pgbench per row, dispatcher delivering (OUTBOX_POLL_INTERVAL_MS " +
                     w["dispatcher_settings"].value("OUTBOX_POLL_INTERVAL_MS", std::string("default")) +
                     " in every mode)\n" + format_table(rows);
  text += "(" + w["note"].get<std::string>() + ")\n";

  std::string verdict;
  bool met = true, seen = false;
  for (const auto& r : w["runs"]) {
    if (r["mode"] != "adaptive" || (num(r, "clients") != 16 && num(r, "clients") != 32)) continue;
    seen = true;
    met = met && num(r, "ratio_to_none") >= 0.9;
    verdict += (verdict.empty() ? "" : ", ") + fmt(num(r, "ratio_to_none"), 2) + "x at " + fmt(num(r, "clients"));
  }
  if (seen)
    text += "target adaptive >= 0.9x none at 16 and 32 clients: " + verdict + ": " + (met ? "PASS" : "MISS") + "\n";

  std::vector<std::vector<std::string>> lat{
      {"mode", "commit-to-request p50 / p99", "dispatcher CPU", "dups / missing", "dispatcher warnings"}};
  for (const auto& m : wake_modes) {
    if (!w["latency"].contains(m.name)) continue;
    const json& l = w["latency"][m.name];
    lat.push_back(
        {m.name,
         fmt(num(l, "commit_to_request_ms", "p50"), 2) + " / " + fmt(num(l, "commit_to_request_ms", "p99"), 2) + " ms",
         fmt(num(l["resources"], "dispatcher_cpu_us_per_row")) + " us/row",
         fmt(num(l, "duplicates")) + " / " + fmt(num(l, "missing")),
         describe_log_problems(l.value("dispatcher_log_problems", json::object()))});
  }
  const double rate = w["latency"].empty() ? 0.0 : num(w["latency"].begin().value(), "rate_offered");
  text += "\nlatency scenario per mode, " + fmt(rate) + " rows/s offered\n" + format_table(lat);
  std::cout << text << std::flush;
}

}  // namespace outbox::bench

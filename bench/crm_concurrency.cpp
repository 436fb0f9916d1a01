// `crm`: the set-up a CRM runs (issue 29). One signed webhook destination at a
// per-destination CONCURRENCY of 10 and of 50, every other setting at its
// default: a drain of --rows (20,000) rows inserted by one statement before the
// dispatcher starts, then commit-to-request latency at --rate (200) events/s for
// --seconds (10) from 4 producer connections, delivered to a Node receiver in a
// process of its own (--sink receiver, the default here). Per concurrency:
// PostgreSQL and dispatcher CPU per event, events/s, p50 / p99, peak RSS,
// duplicates, the receiver's CPU and the bench process's (producers, completion
// poll) and WAL per event, and, when pg_stat_statements is loaded, the
// statements per event by role.
#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/support.hpp"

namespace outbox::bench {
namespace {

using json = nlohmann::json;

// Which part of the dispatcher (or the bench) sent a statement, by a piece of
// its text without literals (pg_stat_statements shows those as $n).
std::string role_of(const std::string& query) {
  const auto has = [&](const char* s) { return query.find(s) != std::string::npos; };
  if (has("claimed AS (") || has("min(lease_expires_at)")) return "claim";
  if (has("AS s(id, token, new_state")) return "settle";
  if (has("JOIN unnest($1::bigint[], $2::uuid[]) AS s(id, token)")) return "renew";
  if (query.starts_with("LISTEN") || query == "SELECT $1") return "listener";
  if (has("enqueue_event_delivery") || has("generate_series") || has("left_over") || has("pg_stat") || has("VACUUM") ||
      has("pg_current_wal") || has("pg_postmaster_pid") || has("GROUP BY state"))
    return "bench";
  return "maintenance";
}

// Statements of the cluster since the last reset, per role: calls and time per event.
json statements_by_role(pg& conn, double events) {
  json out = json::object();
  pg_result r;
  try {
    r = conn.exec("SELECT query, calls, total_exec_time + total_plan_time FROM pg_stat_statements");
  } catch (const std::exception&) {
    return nullptr;  // not loaded (shared_preload_libraries)
  }
  std::map<std::string, std::pair<double, double>> sums;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    auto& [calls, ms] = sums[role_of(value(r, i, 0))];
    calls += std::stod(value(r, i, 1));
    ms += std::stod(value(r, i, 2));
  }
  for (const auto& [role, v] : sums) {
    out[role] = {{"statements_per_event", v.first / events}, {"exec_us_per_event", v.second * 1000 / events}};
  }
  return out;
}

}  // namespace

json run_crm(const options& o) {
  pg admin("dbname=postgres");
  json out = json::object();
  for (const int concurrency : o.crm_concurrency) {
    options c = o;
    c.concurrency = concurrency;
    c.rows = o.rows_given ? o.rows : 20000;
    c.insert_batch = static_cast<int>(c.rows);  // one statement
    c.producers = 4;
    if (!o.seconds_given) c.seconds = 10;
    note("crm: concurrency " + std::to_string(concurrency));
    json one;
    const bool counted = reset_statements(admin);
    c.count_statements = counted;
    one["drain"] = run_throughput(c, true);
    if (counted) one["drain"]["statements_by_role"] = statements_by_role(admin, static_cast<double>(c.rows));
    one["latency"] = run_latency(c);
    const double offered = c.rate * (c.seconds + c.warmup);  // counted from the dispatcher's readiness
    if (counted) one["latency"]["statements_by_role"] = statements_by_role(admin, offered);
    out[std::to_string(concurrency)] = std::move(one);
  }
  return out;
}

void print_crm_summary(const json& crm) {
  std::vector<std::vector<std::string>> table{{"concurrency", "PostgreSQL us/event", "dispatcher us/event", "events/s",
                                               "p50 / p99 ms @ rate", "receiver us/event", "bench us/event",
                                               "WAL B/event", "RSS MB", "dup"}};
  const auto per = [](const json& t, const char* key) { return num(t, "resources", key); };
  // The receiver's own process when it had one (--sink receiver), else n/a: the lean sink is the bench's.
  const auto receiver = [&](const json& t, double rows) {
    const auto& r = t["resources"]["receiver_process_cpu_seconds"];
    return r.is_number() ? fmt(r.get<double>() / rows * 1e6) : std::string("n/a");
  };
  for (const auto& [conc, one] : crm.items()) {
    const auto& d = one["drain"];
    const auto& l = one["latency"];
    const double rows = num(d, "rows");
    table.push_back(
        {conc,
         fmt(per(d, "postgres_cpu_seconds") / rows * 1e6) + " / " +
             fmt(per(l, "postgres_cpu_seconds") / num(l, "rows_measured") * 1e6),
         fmt(per(d, "dispatcher_cpu_us_per_row")) + " / " + fmt(per(l, "dispatcher_cpu_us_per_row")),
         fmt(num(d, "rows_per_second")),
         fmt(num(l, "commit_to_request_ms", "p50"), 2) + " / " + fmt(num(l, "commit_to_request_ms", "p99"), 2),
         receiver(d, rows) + " / " + receiver(l, num(l, "rows_measured")),
         fmt(per(d, "bench_process_cpu_seconds") / rows * 1e6),
         fmt(num(d["resources"], "postgres_wal", "wal_bytes_per_row")),
         fmt(std::max(num(d, "dispatcher_peak_rss_mb"), num(l, "dispatcher_peak_rss_mb")), 1),
         fmt(num(d, "duplicates") + num(l, "duplicates")) +
             (num(d, "requests_refused_by_receiver") + num(l, "requests_refused_by_receiver") > 0 ? " (refused!)"
                                                                                                  : "")});
  }
  std::cout << "\n(drain / latency run where two figures)\n" << format_table(table);
  for (const auto& [conc, one] : crm.items()) {
    for (const char* phase : {"drain", "latency"}) {
      const auto& s = one[phase].value("statements_by_role", json());
      if (!s.is_object()) continue;
      std::string line = "concurrency " + conc + ", " + phase + ": statements per event";
      for (const auto& [role, v] : s.items()) {
        line += "  " + role + " " + fmt(v["statements_per_event"].get<double>(), 3) + " (" +
                fmt(v["exec_us_per_event"].get<double>(), 1) + " us)";
      }
      std::cout << line << "\n";
    }
  }
  std::cout << std::flush;
}

}  // namespace outbox::bench

// ceiling: what the database itself can claim and settle, with no dispatcher,
// no HTTP and no JSON: one blocking libpq connection runs the engine's own
// claim and settle statements (db/delivery_sql.hpp) back to back on a backlog,
// every row settled `sent` with its attempts-log row. The batched scenario's
// drain rate is compared with this figure measured in the same run.
#include <algorithm>
#include <random>

#include "bench/support.hpp"
#include "bench/workload.hpp"
#include "db/delivery_sql.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::bench {
namespace {

using json = nlohmann::json;

std::string random_token(std::mt19937_64& rng) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string t(36, '-');
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) continue;
    t[i] = hex[rng() & 15];
  }
  t[14] = '4';
  return t;
}

// "{a,b,c}" of the same item n times.
std::string repeated(const std::string& item, std::size_t n) {
  std::string out = "{";
  for (std::size_t i = 0; i < n; ++i) out += (i ? "," : "") + item;
  return out + "}";
}

// The settle's 20 parameters for `ids` (db/delivery_store.cpp builds the same shape).
std::vector<std::string> sent_settle(const std::vector<std::string>& ids, const std::string& token) {
  const std::size_t n = ids.size();
  std::string id_list = "{";
  for (std::size_t i = 0; i < n; ++i) id_list += (i ? "," : "") + ids[i];
  id_list += "}";
  const std::string now_ms = std::to_string(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  return {"bench-ceiling",       id_list,
          repeated(token, n),    repeated("sent", n),
          repeated("0", n),      repeated("f", n),
          repeated("1", n),      repeated(now_ms, n),
          repeated("3", n),      repeated("delivered", n),
          repeated("200", n),    repeated("\"\"", n),
          repeated("\"{}\"", n), repeated("t", n),
          repeated("\"\"", n),   repeated("\"\"", n),
          repeated("\"\"", n),   repeated("\"\"", n),
          repeated("0", n),      repeated("NULL", n)};
}

// `n` rows already delivered (the table of a CRM after months), inserted in
// chunks without waiting for each commit's flush (only this set-up does so).
void preload_sent_rows(pg& conn, std::int64_t n, const std::string& payload) {
  note("ceiling: preloading " + std::to_string(n) + " sent rows");
  (void)conn.exec("SET synchronous_commit = off");
  constexpr std::int64_t chunk = 500000;
  for (std::int64_t from = 1; from <= n; from += chunk) {
    const std::int64_t to = std::min(n, from + chunk - 1);
    (void)conn.exec(
        "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload, state, "
        "attempts, sent_at, created_at, updated_at) "
        "SELECT 1000000000000 + g, 'webhook', 'Lead', 'preloaded-' || g, $3::jsonb, 'sent', 1, "
        "now() - interval '1 day', now() - interval '2 days', now() - interval '1 day' "
        "FROM generate_series($1::bigint, $2::bigint) g",
        {std::to_string(from), std::to_string(to), payload});
  }
  (void)conn.exec("SET synchronous_commit = on");
}

}  // namespace

json run_ceiling(const options& o) {
  const int batch = o.claim_batch.value_or(500);
  note("ceiling: " + std::to_string(o.rows) + " rows, claim and settle only, batches of " + std::to_string(batch));
  test::scratch_database db;
  pg conn(db.conninfo());
  cluster_cpu cluster(conn.backend_pid());
  const workload rows = workload_for(o);
  conn.prepare("ins", rows.insert_sql);
  for (std::int64_t from = 1; from <= o.rows; from += o.insert_batch) {
    const std::int64_t to = std::min<std::int64_t>(o.rows, from + o.insert_batch - 1);
    (void)conn.exec_prepared("ins", {std::to_string(from), std::to_string(to), rows.payload});
  }
  if (o.preload_sent > 0) preload_sent_rows(conn, o.preload_sent, rows.payload);
  (void)conn.exec("VACUUM ANALYZE event_delivery");
  // The dispatcher's own connections and session settings (dispatcher/engine/db_link.cpp)
  // and its choice of plan (db/delivery_store.cpp: small settles prepared with
  // a generic plan, larger ones planned for their size), so that at small
  // batches this measures what the dispatcher's statements cost.
  (void)conn.exec(db::sql::claim_session_settings);
  conn.prepare("claim", db::sql::claim);
  pg settle_conn(db.conninfo());
  (void)settle_conn.exec(db::sql::settle_session_settings);
  settle_conn.prepare("settle", db::sql::settle);

  std::mt19937_64 rng{42};
  std::int64_t settled = 0, statements = 0;
  std::vector<double> claim_ms;
  cluster.mark();
  const double pg0 = cluster.seconds(), self0 = self_cpu_seconds();
  const auto t0 = steady::now();
  for (;;) {
    const std::string token = random_token(rng);
    const auto c0 = steady::now();
    const std::vector<std::optional<std::string>> args{
        "bench-ceiling", token, "60", std::to_string(batch), "12", "{}", std::nullopt, std::nullopt, std::nullopt};
    const auto claimed = conn.exec_prepared_nullable("claim", args);
    claim_ms.push_back(ms_between(c0, steady::now()));
    ++statements;
    const int n = PQntuples(claimed.get());
    std::vector<std::string> ids;
    ids.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      if (!PQgetisnull(claimed.get(), i, 0)) ids.push_back(value(claimed, i, 0));  // not the next-due row
    }
    if (ids.empty()) break;
    if (ids.size() < db::sql::settle_prepared_below) {
      (void)settle_conn.exec_prepared("settle", sent_settle(ids, token));
    } else {
      (void)settle_conn.exec("SET plan_cache_mode = force_custom_plan");
      (void)settle_conn.exec(db::sql::settle, sent_settle(ids, token));
      (void)settle_conn.exec("SET plan_cache_mode = force_generic_plan");
    }
    ++statements;
    settled += static_cast<std::int64_t>(ids.size());
  }
  const double seconds = seconds_between(t0, steady::now());
  const double pg_seconds = cluster.seconds() - pg0;
  json out;
  out["rows"] = settled;
  out["claim_batch"] = batch;
  out["seconds"] = seconds;
  out["rows_per_second"] = static_cast<double>(settled) / seconds;
  out["statements"] = statements;
  out["postgres_cpu_us_per_row"] = pg_seconds / static_cast<double>(settled) * 1e6;
  out["client_cpu_us_per_row"] = (self_cpu_seconds() - self0) / static_cast<double>(settled) * 1e6;
  std::sort(claim_ms.begin(), claim_ms.end());
  out["claim_ms_p50"] = percentile(claim_ms, 50);
  out["claim_ms_p99"] = percentile(claim_ms, 99);
  out["preloaded_sent_rows"] = o.preload_sent;
  out["table_size_mb"] = static_cast<double>(conn.scalar("SELECT pg_total_relation_size('event_delivery')")) / 1e6;
  out["sent_rows"] = conn.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'");
  note("ceiling: " + fmt(out["rows_per_second"].get<double>()) + " rows/s, PostgreSQL " +
       fmt(out["postgres_cpu_us_per_row"].get<double>(), 1) + " us/row");
  return out;
}

}  // namespace outbox::bench

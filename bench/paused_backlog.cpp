// paused-backlog: what a claim costs while one destination is paused with a
// backlog (issue 30). For each --paused-rows count: that many due rows of a
// paused Meta destination, due an hour before 20,000 webhook rows; then
// claims of 10 webhook rows, timed, as the engine runs them (the single scan
// of the work index when nothing is skipped, the claim by destination when
// the paused destination is skipped), and the single scan given the same skip
// list for comparison (what every claim cost before). Buffers from EXPLAIN
// (ANALYZE, BUFFERS) of one more claim of each kind.
#include <algorithm>

#include "bench/support.hpp"
#include "db/delivery_sql.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::bench {
namespace {

using json = nlohmann::json;

constexpr int claims_per_kind = 100;
constexpr int claim_rows = 10;
constexpr const char* settle_claimed =
    "UPDATE event_delivery SET state = 'sent', sent_at = now(), lease_owner = NULL, lease_token = NULL, "
    "lease_expires_at = NULL WHERE lease_owner = 'bench-paused' AND state = 'sending'";

void load_paused_backlog(pg& conn, std::int64_t paused) {
  (void)conn.exec("SET synchronous_commit = off");
  constexpr std::int64_t chunk = 500000;
  for (std::int64_t from = 1; from <= paused; from += chunk) {
    const std::int64_t to = std::min(paused, from + chunk - 1);
    (void)conn.exec(
        "INSERT INTO event_delivery (lead_project_id, provider, destination, event_name, idempotency_key, payload, "
        "next_attempt_at) SELECT g, 'meta', 'paused', 'Lead', 'paused-' || g, '{\"value\": 1}', "
        "now() - interval '1 hour' FROM generate_series($1::bigint, $2::bigint) g",
        {std::to_string(from), std::to_string(to)});
  }
  (void)conn.exec(
      "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload) "
      "SELECT 100000000 + g, 'webhook', 'Lead', 'live-' || g, '{\"value\": 1}' FROM generate_series(1, 20000) g");
  (void)conn.exec("SET synchronous_commit = on");
  (void)conn.exec("VACUUM ANALYZE event_delivery");
}

// The claim's parameters; the single scan takes two more (where it starts: the beginning).
std::vector<std::optional<std::string>> claim_args(int n, const std::string& skip, const std::string& statement) {
  static std::int64_t claims = 0;
  const std::string count = std::to_string(++claims);  // a UUID per claim: 12 hex digits at the end
  const std::string token =
      "00000000-0000-4000-8000-" + std::string(12 - std::min<std::size_t>(12, count.size()), '0') + count;
  std::vector<std::optional<std::string>> args{"bench-paused", token, "60",        std::to_string(n),
                                               "12",           skip,  std::nullopt};
  if (statement == "single_scan") args.resize(9);
  return args;
}

// Times `count` claims of the prepared `statement`; milliseconds, sorted.
std::vector<double> time_claims(pg& conn, const std::string& statement, const std::string& skip, int count) {
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    const auto t0 = steady::now();
    (void)conn.exec_prepared_nullable(statement, claim_args(claim_rows, skip, statement));
    ms.push_back(ms_between(t0, steady::now()));
    (void)conn.exec(settle_claimed);  // as the engine would: settled rows leave the claim's way
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

long long buffers_of(pg& conn, const std::string& statement, const std::string& skip) {
  const auto args = claim_args(claim_rows, skip, statement);
  const auto r = conn.exec("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE " + statement + "('" + *args[0] + "', '" +
                           *args[1] + "', 60, " + std::to_string(claim_rows) + ", 12, '" + skip + "', NULL" +
                           (statement == "single_scan" ? ", NULL, NULL)" : ")"));
  const auto plan = json::parse(value(r, 0, 0)).at(0).at("Plan");
  return plan.value("Shared Hit Blocks", 0LL) + plan.value("Shared Read Blocks", 0LL);
}

json measure_paused_backlog(std::int64_t paused) {
  note("paused-backlog: " + std::to_string(paused) + " paused rows");
  test::scratch_database db;
  pg conn(db.conninfo());
  load_paused_backlog(conn, paused);
  (void)conn.exec(db::sql::claim_session_settings);
  conn.prepare("single_scan", db::sql::claim);
  conn.prepare("by_destination", db::sql::claim_by_destination);
  const std::string skip = paused > 0 ? "{meta/paused}" : "{}";
  // What the engine runs: db/delivery_store.cpp chooses by the skip list.
  const std::string engine = paused > 0 ? "by_destination" : "single_scan";
  json out;
  out["paused_rows"] = paused;
  const auto ms = time_claims(conn, engine, skip, claims_per_kind);
  out["engine_statement"] = engine;
  out["engine_claim_ms_p50"] = percentile(ms, 50);
  out["engine_claim_ms_p99"] = percentile(ms, 99);
  out["engine_claim_buffers"] = buffers_of(conn, engine, skip);
  if (paused > 0) {
    // The single scan is slow here: fewer tries.
    const auto before = time_claims(conn, "single_scan", skip, std::max(3, claims_per_kind / 20));
    out["single_scan_claim_ms_p50"] = percentile(before, 50);
    out["single_scan_claim_buffers"] = buffers_of(conn, "single_scan", skip);
  }
  return out;
}

}  // namespace

json run_paused_backlog(const options& o) {
  json out = json::array();
  for (const auto paused : o.paused_rows) out.push_back(measure_paused_backlog(paused));
  return out;
}

void print_paused_backlog_summary(const json& result) {
  std::vector<std::vector<std::string>> table{
      {"paused rows", "claim (engine)", "p50 ms", "p99 ms", "buffers", "single scan p50 ms", "single scan buffers"}};
  for (const auto& r : result) {
    table.push_back({fmt(num(r, "paused_rows")), r["engine_statement"].get<std::string>(),
                     fmt(num(r, "engine_claim_ms_p50"), 2), fmt(num(r, "engine_claim_ms_p99"), 2),
                     fmt(num(r, "engine_claim_buffers")), fmt(num(r, "single_scan_claim_ms_p50"), 1),
                     fmt(num(r, "single_scan_claim_buffers"))});
  }
  std::cout << "\n" << format_table(table) << std::flush;
}

}  // namespace outbox::bench

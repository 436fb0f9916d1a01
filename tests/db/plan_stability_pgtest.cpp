// The claim and the settle keep one generic plan per session. A plan made
// while the table held a few rows must still read only what its batch needs
// once the table has grown (db/delivery_sql.hpp, the session settings).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "db/delivery_sql.hpp"
#include "db/delivery_store.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "tests/support/must.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace plan_stability_pgtest {

using outbox::test::must;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using nlohmann::json;
using outbox::db::connection;

namespace {

// Statistics of a table in mid-delivery (what autovacuum's ANALYZE records
// on a busy day: 40 % pending, 1 % sending, the rest sent, due times out of
// insertion order), then a table of a few rows: after a TRUNCATE, a fresh
// install, or a prune. These statistics made both plans read everything.
constexpr const char* tiny_table_with_busy_statistics = R"sql(
ALTER TABLE event_delivery SET (autovacuum_enabled = off);
INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload, next_attempt_at)
SELECT g, 'webhook', 'Lead', 'stats-' || g, '{"value": 129.5}', now() - random() * interval '1 hour'
FROM generate_series(1, 4000) g;
UPDATE event_delivery SET state = 'sending', lease_owner = 'old', lease_token = gen_random_uuid(),
    lease_expires_at = now() + interval '1 minute', attempts = 1 WHERE id % 100 >= 40;
UPDATE event_delivery SET state = 'sent', sent_at = now(), lease_owner = NULL, lease_expires_at = NULL
WHERE id % 100 >= 41;
ANALYZE event_delivery;
TRUNCATE event_delivery, event_delivery_attempt;
SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{"value": 1}') FROM generate_series(1, 20) g;
)sql";

// Buffers read by the scans of event_delivery in an EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) plan.
long long buffers_of_event_delivery_scans(const json& node) {
  long long total = 0;
  const std::string type = node.value("Node Type", "");
  const bool scan = type.size() >= 4 && type.compare(type.size() - 4, 4, "Scan") == 0;
  if (scan && node.value("Relation Name", "") == "event_delivery" && node.contains("Shared Hit Blocks"))
    total += node["Shared Hit Blocks"].get<long long>() + node.value("Shared Read Blocks", 0LL);
  if (node.contains("Plans"))
    for (const auto& child : node["Plans"]) total += buffers_of_event_delivery_scans(child);
  return total;
}

long long explain_buffers(const outbox::db::result& r) {
  return buffers_of_event_delivery_scans(json::parse(r.text(0, 0)).at(0).at("Plan"));
}

outbox::db::claim_request claim_req(const std::string& owner, int limit) {
  outbox::db::claim_request r;
  r.owner = owner;
  r.token = outbox::random_uuid();
  r.lease = 30s;
  r.limit = limit;
  return r;
}

}  // namespace

TEST_CASE("claim and settle plans made on a tiny table read only their batch once the table has grown") {
  outbox::test::scratch_database db;
  // One statement at a time, each in its own transaction, as autovacuum and a
  // pruning job would run them.
  const std::string recipe = tiny_table_with_busy_statistics;
  for (std::size_t from = 0, end; (end = recipe.find(";\n", from)) != std::string::npos; from = end + 2)
    db.query(recipe.substr(from, end - from));

  struct figures {
    long long claim_buffers = 0;
    long long settle_buffers = 0;
    long long settled = 0;
  };
  const auto f = outbox::test::run_async([&](auto ex) -> asio::awaitable<figures> {
    auto claim_conn = co_await connection::async_connect(ex, db.conninfo(), 5s);
    auto settle_conn = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await claim_conn.async_query(outbox::db::sql::claim_session_settings, {}, 5s);
    (void)co_await settle_conn.async_query(outbox::db::sql::settle_session_settings, {}, 5s);

    // The first claim and settle make their generic plans on 20 rows.
    auto rows = must(co_await outbox::db::async_claim(claim_conn, claim_req("a", 10)));
    REQUIRE(rows.size() == 10);
    outbox::db::settlement s;
    s.id = rows[0].id;
    s.lease_token = rows[0].lease_token;
    s.state = outbox::db::settle_state::sent;
    s.attempt = rows[0].attempts;
    s.started_at = std::chrono::system_clock::now();
    s.outcome = "delivered";
    s.http_status = 200;
    (void)must(co_await outbox::db::async_settle(settle_conn, "a", std::span(&s, 1)));

    // The table grows to 8,000 due rows (no ANALYZE: the cached plans stay).
    outbox::test::sql(db.conninfo(),
                      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{\"value\": 1}') "
                      "FROM generate_series(100, 8099) g");

    // The cached plans, run again: one row claimed, one row settled.
    figures out;
    const auto claim_plan =
        co_await claim_conn.async_query("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE outbox_claim_v5('a', '" +
                                            outbox::random_uuid() + "', 30, 1, 12, '{}', NULL, NULL, NULL)",
                                        {}, 10s);
    out.claim_buffers = explain_buffers(claim_plan);
    // Arguments in the order of sql::settle: owner, then one array per column of `s`.
    const auto settle_plan = co_await settle_conn.async_query(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE outbox_settle_v6('a', '{" + std::to_string(rows[1].id) +
            "}', '{" + rows[1].lease_token +
            "}', '{sent}', '{0}', '{f}', '{1}', '{0}', '{1}', '{delivered}', '{200}', '{\"\"}', '{\"\"}', '{t}', "
            "'{\"\"}', '{\"\"}', '{\"\"}', '{\"\"}', '{0}', '{NULL}')",
        {}, 10s);
    out.settle_buffers = explain_buffers(settle_plan);
    out.settled = db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'");
    co_return out;
  });
  CAPTURE(f.claim_buffers);
  CAPTURE(f.settle_buffers);
  CHECK(f.settled == 2);  // the explained settle ran for real
  // A lookup per row reads a handful of pages; reading the backlog (8,000 rows
  // on about a thousand pages) or the whole primary key reads thousands.
  CHECK(f.claim_buffers < 100);
  CHECK(f.settle_buffers < 100);
}

}  // namespace plan_stability_pgtest

// A paused destination's backlog costs the claim nothing (issue 30): the claim
// that skips destinations goes destination by destination
// (db/delivery_sql.hpp, claim_by_destination) and never reads skipped rows.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "db/delivery_sql.hpp"
#include "db/delivery_store.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "tests/support/must.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace paused_backlog_pgtest {

using outbox::test::must;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using nlohmann::json;
using outbox::db::connection;

namespace {

// Every buffer the statement touched (hit or read), from the plan's top node.
long long plan_buffers(const outbox::db::result& r) {
  const auto plan = json::parse(r.text(0, 0)).at(0).at("Plan");
  return plan.value("Shared Hit Blocks", 0LL) + plan.value("Shared Read Blocks", 0LL);
}

outbox::db::claim_request claim_req(int limit, std::vector<std::string> skip) {
  outbox::db::claim_request r;
  r.owner = "a";
  r.token = outbox::random_uuid();
  r.lease = 30s;
  r.limit = limit;
  r.skip_destinations = std::move(skip);
  return r;
}

// GCC 12 mishandles braced lists inside coroutines: built out here.
std::vector<std::string> paused_key() { return {"meta/paused"}; }

// Rows of meta/paused due an hour ago, ahead of everything else in schedule order.
void paused_backlog(const outbox::test::scratch_database& db, int rows) {
  db.query(
      "INSERT INTO event_delivery (lead_project_id, provider, destination, event_name, idempotency_key, payload, "
      "next_attempt_at) SELECT g, 'meta', 'paused', 'Lead', 'paused-' || g, '{\"value\": 1}', "
      "now() - interval '1 hour' FROM generate_series(1, $1::int) g",
      {std::to_string(rows)});
}

void live_rows(const outbox::test::scratch_database& db, int from, int to, const std::string& destination = "default") {
  db.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{\"value\": 1}', $3) FROM generate_series($1::int, "
      "$2::int) g",
      {std::to_string(from), std::to_string(to), destination});
}

// `more`: the single scan's two more parameters (where it starts).
std::string explain_execute(const std::string& statement, const std::string& skip, const std::string& more = "") {
  return "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE " + statement + "('a', '" + outbox::random_uuid() +
         "', 30, 10, 12, '" + skip + "', NULL" + more + ")";
}

}  // namespace

TEST_CASE("a claim that skips a paused destination reads none of its backlog") {
  outbox::test::scratch_database db;
  paused_backlog(db, 50'000);
  live_rows(db, 1, 5);
  db.query("ANALYZE event_delivery");

  struct figures {
    std::size_t first_claim = 0;
    long long by_destination = 0;  // buffers of the claim the engine runs
    long long whole_queue = 0;     // buffers of the single-scan claim given the same skip list
    long long claimed_after = 0;
  };
  const auto f = outbox::test::run_async([&](auto ex) -> asio::awaitable<figures> {
    auto conn = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await conn.async_query(outbox::db::sql::claim_session_settings, {}, 5s);
    figures out;
    // The engine's claim: it prepares the statement (its generic plan is made now).
    const auto req = claim_req(10, paused_key());
    const auto first = must(co_await outbox::db::async_claim_batch(conn, req));
    out.first_claim = first.rows.size();
    live_rows(db, 6, 10);
    const auto engine =
        co_await conn.async_query(explain_execute("outbox_claim_by_destination_v2", "{meta/paused}"), {}, 30s);
    out.by_destination = plan_buffers(engine);
    out.claimed_after = db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending'");
    // What the claim cost before: one scan of the work index, skipped rows filtered one by one.
    (void)co_await conn.async_query(std::string("PREPARE whole_queue AS ") + outbox::db::sql::claim, {}, 5s);
    live_rows(db, 11, 15);
    const auto before =
        co_await conn.async_query(explain_execute("whole_queue", "{meta/paused}", ", NULL, NULL"), {}, 30s);
    out.whole_queue = plan_buffers(before);
    co_return out;
  });
  CAPTURE(f.by_destination);
  CAPTURE(f.whole_queue);
  CHECK(f.first_claim == 5);
  CHECK(f.claimed_after == 10);  // the explained claim ran for real: 5 more rows
  // 50,000 paused rows fill hundreds of pages; the claim reads the live rows,
  // one index descent per destination and its own batch.
  CHECK(f.by_destination < 150);
  CHECK(f.whole_queue > 1000);  // the figure the claim would cost without its own statement
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'paused' AND state <> 'pending'") == 0);
}

TEST_CASE("the claim by destination takes what the single-scan claim takes, skipped rows aside") {
  outbox::test::scratch_database db;
  paused_backlog(db, 3);
  live_rows(db, 1, 4);
  live_rows(db, 5, 6, "unconfigured");  // a destination no dispatcher knows: claimed, and killed by the sender
  // A row of a live destination whose lease expired: reclaimed.
  db.query(
      "UPDATE event_delivery SET state = 'sending', lease_owner = 'gone', lease_token = gen_random_uuid(), "
      "lease_expires_at = now() - interval '1 minute', attempts = 1 WHERE lead_project_id = 4");
  // One live row due later: the claim is not full and says when it is due.
  live_rows(db, 7, 7);
  db.query("UPDATE event_delivery SET next_attempt_at = now() + interval '5 seconds' WHERE lead_project_id = 7");

  const auto [batch, probe] = outbox::test::run_async(
      [&](auto ex) -> asio::awaitable<std::pair<outbox::db::claim_batch, outbox::db::claim_batch>> {
        auto conn = co_await connection::async_connect(ex, db.conninfo(), 5s);
        (void)co_await conn.async_query(outbox::db::sql::claim_session_settings, {}, 5s);
        const auto req = claim_req(100, paused_key());
        auto found = must(co_await outbox::db::async_claim_batch(conn, req));
        auto probe_req = claim_req(1, std::vector<std::string>());
        probe_req.only_destination = "meta/paused";
        auto probed = must(co_await outbox::db::async_claim_batch(conn, probe_req));
        co_return std::pair{std::move(found), std::move(probed)};
      });
  std::set<std::string> destinations;
  int reclaimed = 0;
  for (const auto& row : batch.rows) {
    destinations.insert(row.provider + "/" + row.destination);
    reclaimed += row.reclaimed ? 1 : 0;
  }
  CHECK(batch.rows.size() == 6);
  CHECK(destinations == std::set<std::string>{"webhook/default", "webhook/unconfigured"});
  CHECK(reclaimed == 1);
  REQUIRE(batch.next_due.has_value());
  REQUIRE(batch.next_due->has_value());
  CHECK(**batch.next_due > 3s);  // the row due in 5 s, not the paused rows due an hour ago
  CHECK(**batch.next_due <= 5s);
  // The probe after a pause takes one row of that destination only.
  REQUIRE(probe.rows.size() == 1);
  CHECK(probe.rows[0].destination == "paused");
  CHECK_FALSE(probe.next_due.has_value());
}

}  // namespace paused_backlog_pgtest

// The claim's one ordered scan started at a place of the schedule (claim_request::scan_from):
// rows before it are not read, rows of one transaction are told apart by id, and
// the scan steps back a second for rows whose transaction committed late.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/delivery_sql.hpp"
#include "db/delivery_store.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "tests/support/must.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

namespace claim_scan_start_pgtest {

using outbox::test::must;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::claim_position;
using outbox::db::connection;

namespace {

// Rows `first`..`last` of destination `destination`, enqueued in one statement
// (one next_attempt_at), then due `ago` before now.
void enqueue(const outbox::test::scratch_database& db, int first, int last, const std::string& destination,
             const std::string& ago) {
  db.query("SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{}', $3) FROM generate_series($1::int, $2::int) g",
           {std::to_string(first), std::to_string(last), destination});
  db.query("UPDATE event_delivery SET next_attempt_at = now() - $3::interval WHERE lead_project_id BETWEEN $1 AND $2",
           {std::to_string(first), std::to_string(last), ago});
}

long long id_of(const outbox::test::scratch_database& db, int lead) {
  return db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = $1", {std::to_string(lead)});
}

claim_position position_of(const outbox::test::scratch_database& db, int lead) {
  return {db.scalar("SELECT (extract(epoch FROM next_attempt_at) * 1000000)::bigint FROM event_delivery "
                    "WHERE lead_project_id = $1",
                    {std::to_string(lead)}),
          id_of(db, lead)};
}

outbox::db::claim_batch claim(const outbox::test::scratch_database& db, std::optional<claim_position> from,
                              std::vector<std::string> skip = {}) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::claim_batch> {
    auto conn = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::claim_request req;
    req.owner = "scan-start";
    req.token = outbox::random_uuid();
    req.limit = 100;
    req.skip_destinations = std::move(skip);
    req.few_skipped_rows = true;
    req.scan_from = from;
    co_return must(co_await outbox::db::async_claim_batch(conn, req));
  });
}

// Rows the claim's scan of the work index read and left (its filter: skipped destinations).
long long rows_stepped_over(const nlohmann::json& plan) {
  long long n = 0;
  if (plan.value("Index Name", "") == "event_delivery_work_order_idx") n += plan.value("Rows Removed by Filter", 0LL);
  for (const auto& child : plan.value("Plans", nlohmann::json::array())) n += rows_stepped_over(child);
  return n;
}

std::vector<long long> ids(const outbox::db::claim_batch& b) {
  std::vector<long long> out;
  for (const auto& r : b.rows) out.push_back(r.id);
  return out;
}

}  // namespace

TEST_CASE("a claim starting at a place reads from there on, rows of one transaction told apart by id") {
  outbox::test::scratch_database db;
  enqueue(db, 1, 6, "default", "10 seconds");  // one next_attempt_at, six ids
  const auto third = position_of(db, 3);
  // The first row picked comes back exactly as the table has it: the next claim starts there.
  const auto skipped = claim(db, std::nullopt, {"webhook/default"});
  CHECK(skipped.rows.empty());
  CHECK_FALSE(skipped.first_picked.has_value());
  const auto from_third = claim(db, third);
  CHECK(ids(from_third) == std::vector<long long>{id_of(db, 3), id_of(db, 4), id_of(db, 5), id_of(db, 6)});
  REQUIRE(from_third.first_picked.has_value());
  CHECK(*from_third.first_picked == third);
  // Rows 1 and 2, before the place, were not read; a claim from the beginning takes them.
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'pending'") == 2);
  const auto from_start = claim(db, std::nullopt);
  CHECK(ids(from_start) == std::vector<long long>{id_of(db, 1), id_of(db, 2)});
  CHECK(*from_start.first_picked == position_of(db, 1));
}

TEST_CASE("a claim starting at a place of the last second steps back a second: a late commit is read") {
  outbox::test::scratch_database db;
  enqueue(db, 1, 1, "default", "0 seconds");
  const auto recent = position_of(db, 1);
  // A row whose transaction began half a second before that place and committed after it.
  enqueue(db, 2, 2, "default", "500 milliseconds");
  // And one whose transaction stayed open 5 s: the next claim from the beginning takes it.
  enqueue(db, 3, 3, "default", "5 seconds");
  const auto from_recent = claim(db, recent);
  CHECK(ids(from_recent) == std::vector<long long>{id_of(db, 2), id_of(db, 1)});
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'pending'") == 1);
  CHECK(ids(claim(db, std::nullopt)) == std::vector<long long>{id_of(db, 3)});
}

TEST_CASE("a claim starting past 3,000 skipped rows steps over none of them") {
  outbox::test::scratch_database db;
  enqueue(db, 1, 3000, "held", "10 seconds");
  enqueue(db, 3001, 3010, "default", "10 seconds");
  db.query("VACUUM ANALYZE event_delivery");
  const auto stepped = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::pair<long long, long long>> {
    auto conn = co_await connection::async_connect(ex, db.conninfo(), 5s);
    // As the engine's claim connection: generic plans, so the place is a parameter, not a constant.
    (void)co_await conn.async_query(outbox::db::sql::claim_session_settings, {}, 5s);
    outbox::db::claim_request req;
    req.owner = "scan-start";
    req.token = outbox::random_uuid();
    req.limit = 2;
    req.skip_destinations = {"webhook/held"};
    req.few_skipped_rows = true;
    const auto first = must(co_await outbox::db::async_claim_batch(conn, req));  // prepares the statement
    REQUIRE(first.first_picked.has_value());
    // The engine's statement, explained: from the beginning, then from the place the first claim gave.
    const auto explain = [&](const std::string& from) -> asio::awaitable<long long> {
      const auto r =
          co_await conn.async_query("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE outbox_claim_v5('a', '" +
                                        outbox::random_uuid() + "', 30, 2, 12, '{webhook/held}', NULL, " + from + ")",
                                    {}, 30s);
      co_return rows_stepped_over(nlohmann::json::parse(r.text(0, 0)).at(0).at("Plan"));
    };
    const auto whole = co_await explain("NULL, NULL");
    const auto past =
        co_await explain(std::to_string(first.first_picked->due_us) + ", " + std::to_string(first.first_picked->id));
    co_return std::make_pair(whole, past);
  });
  CHECK(stepped.first >= 3000);  // every skipped row read
  CHECK(stepped.second <= 4);    // only the 4 rows the two claims before it took (in flight now)
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending'") == 6);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'held' AND state <> 'pending'") == 0);
}

TEST_CASE("the work index orders the schedule by next_attempt_at, then id; the one it replaces is gone") {
  outbox::test::scratch_database db;
  CHECK(db.scalar("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                  "WHERE c.relname = 'event_delivery_work_order_idx' AND i.indisvalid AND i.indnatts = 2") == 1);
  CHECK(db.scalar("SELECT count(*) FROM pg_class WHERE relname = 'event_delivery_work_idx'") == 0);
}

}  // namespace claim_scan_start_pgtest

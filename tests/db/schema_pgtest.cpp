// The outbox schema: uniqueness, the enqueue function, idempotency keys, constraints.
#include <doctest/doctest.h>

#include <regex>

#include "db/error.hpp"

#include "tests/support/pg_fixture.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace schema_pgtest {

TEST_CASE("enqueueing the same event twice keeps one row with one deterministic key") {
  outbox::test::scratch_database db;
  const std::string enqueue = "SELECT enqueue_event_delivery($1, $2, $3, $4::jsonb)";
  CHECK(db.query(enqueue, {"42", "meta", "Lead", R"({"event_time": 1700000000})"}).boolean(0, 0));
  CHECK_FALSE(db.query(enqueue, {"42", "meta", "Lead", R"({"event_time": 1800000000})"}).boolean(0, 0));
  CHECK(db.query(enqueue, {"42", "tiktok", "Lead", R"({})"}).boolean(0, 0));

  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 2);
  auto r = db.query(
      "SELECT idempotency_key, payload->>'event_time', state, destination, attempts "
      "FROM event_delivery WHERE provider = 'meta'");
  const std::string key(r.text(0, 0));
  CHECK(std::regex_match(key, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  CHECK(r.text(0, 1) == "1700000000");  // the first payload stays frozen
  CHECK(r.text(0, 2) == "pending");
  CHECK(r.text(0, 3) == "default");
  CHECK(r.int64(0, 4) == 0);
  // Deterministic: the same triple always derives the same key, in any database.
  CHECK(db.query("SELECT outbox_idempotency_key(42, 'meta', 'Lead')").text(0, 0) == key);
  CHECK(db.query("SELECT outbox_idempotency_key(43, 'meta', 'Lead')").text(0, 0) != key);
}

TEST_CASE("a caller-provided idempotency key and destination are kept") {
  outbox::test::scratch_database db;
  db.query("SELECT enqueue_event_delivery(7, 'webhook', 'Purchase', '{}'::jsonb, 'crm_hook', 'order-991')");
  auto r = db.query("SELECT idempotency_key, destination FROM event_delivery");
  CHECK(r.text(0, 0) == "order-991");
  CHECK(r.text(0, 1) == "crm_hook");
}

TEST_CASE("the unique triple rejects a plain duplicate insert") {
  outbox::test::scratch_database db;
  const std::string insert =
      "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload) "
      "VALUES (1, 'meta', 'Lead', 'k', '{}')";
  db.query(insert);
  std::string state;
  try {
    db.query(insert);
  } catch (const outbox::db::error& e) {
    state = e.sqlstate();
  }
  CHECK(state == "23505");
}

TEST_CASE("state and lease constraints reject impossible rows") {
  outbox::test::scratch_database db;
  db.query("SELECT enqueue_event_delivery(1, 'meta', 'Lead', '{}'::jsonb)");
  for (const std::string bad :
       {"UPDATE event_delivery SET state = 'lost'", "UPDATE event_delivery SET state = 'sending'",
        "UPDATE event_delivery SET lease_token = gen_random_uuid(), lease_expires_at = now()"}) {
    CAPTURE(bad);
    std::string state;
    try {
      db.query(bad);
    } catch (const outbox::db::error& e) {
      state = e.sqlstate();
    }
    CHECK(state == "23514");
  }
}

}  // namespace schema_pgtest

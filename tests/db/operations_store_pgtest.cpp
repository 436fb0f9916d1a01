// On-call statements: status, requeue, inspect, prune, pause/resume
// (the conversion report of `status` is in conversion_report_store_pgtest.cpp).
#include <doctest/doctest.h>

#include <chrono>

#include "db/operations_store.hpp"
#include "dispatcher/duration_arg.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;

namespace {

// Rows in every state, as the dispatcher would leave them.
void seed(const outbox::test::scratch_database& db) {
  db.query("SELECT enqueue_event_delivery(g, CASE WHEN g % 2 = 0 THEN 'meta' ELSE 'tiktok' END, 'Lead', '{}'::jsonb) "
           "FROM generate_series(1, 8) g");
  db.query("UPDATE event_delivery SET state = 'dead', attempts = 12, last_error = 'HTTP 400: bad currency' "
           "WHERE lead_project_id IN (1, 2)");
  db.query("UPDATE event_delivery SET state = 'held', last_error = 'held for review' WHERE lead_project_id = 3");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() - interval '40 days' WHERE lead_project_id IN (4, 5)");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() WHERE lead_project_id = 6");
  db.query("UPDATE event_delivery SET state = 'sending', lease_owner = 'x', lease_token = gen_random_uuid(), "
           "lease_expires_at = now() - interval '1 minute' WHERE lead_project_id = 7");
}


}  // namespace

TEST_CASE("status reports counts, the oldest due row, expired leases and pauses") {
  outbox::test::scratch_database db;
  seed(db);
  db.query("INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) "
           "VALUES ('meta', 'default', 'token rotation', 'alice@host')");
  const auto s = outbox::test::run_async([&](auto ex) -> asio::awaitable<nlohmann::json> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_status(c);
  });
  CHECK(s["by_state"]["pending"] == 1);
  CHECK(s["by_state"]["dead"] == 2);
  CHECK(s["by_state"]["held"] == 1);
  CHECK(s["by_state"]["sending"] == 1);
  CHECK(s["expired_leases"] == 1);
  CHECK(s["dead_last_24h"] == 2);
  CHECK(s["oldest_due"]["id"].is_number());
  REQUIRE(s["paused_destinations"].size() == 1);
  CHECK(s["paused_destinations"][0]["reason"] == "token rotation");
  CHECK(s["by_destination"].size() == 2);
}

TEST_CASE("requeue moves only matching dead/held rows back, keeps the key, and dry-run changes nothing") {
  outbox::test::scratch_database db;
  seed(db);
  const std::string keys_before =
      db.query("SELECT string_agg(idempotency_key, ',' ORDER BY id) FROM event_delivery").text(0, 0);
  outbox::db::requeue_filter dry;
  dry.error_contains = "currency";
  dry.dry_run = true;
  auto listed = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::size_t> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    const std::string actor = "tester";
    const auto rows = co_await outbox::db::async_requeue(c, dry, actor);
    co_return rows.size();
  });
  CHECK(listed == 2);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'dead'") == 2);

  outbox::db::requeue_filter f;
  f.provider = "meta";
  f.states = {"dead"};
  auto moved = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<outbox::db::requeued_row>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    const std::string actor = "tester";
    co_return co_await outbox::db::async_requeue(c, f, actor);
  });
  REQUIRE(moved.size() == 1);  // lead 2 is meta and dead; lead 1 is tiktok
  CHECK(moved[0].previous_state == "dead");
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 2 AND state = 'pending' "
                  "AND attempts = 0 AND next_attempt_at <= now()") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'requeued' AND lease_owner = 'tester'") == 1);
  CHECK(db.query("SELECT string_agg(idempotency_key, ',' ORDER BY id) FROM event_delivery").text(0, 0) == keys_before);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'held'") == 1);
}

TEST_CASE("inspect returns the row without its lease token, and its attempts") {
  outbox::test::scratch_database db;
  seed(db);
  db.query("INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, http_status, error) "
           "SELECT id, 1, now(), 12, 'dead', 400, 'HTTP 400: bad currency' FROM event_delivery WHERE lead_project_id = 1");
  const auto id = db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = 1");
  auto doc = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::pair<nlohmann::json, nlohmann::json>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    auto found = co_await outbox::db::async_inspect(c, id);
    auto missing = co_await outbox::db::async_inspect(c, 999999);
    co_return std::pair{found, missing};
  });
  CHECK(doc.first["row"]["state"] == "dead");
  CHECK_FALSE(doc.first["row"].contains("lease_token"));
  REQUIRE(doc.first["attempts"].size() == 1);
  CHECK(doc.first["attempts"][0]["http_status"] == 400);
  CHECK(doc.second.is_null());
}

TEST_CASE("prune removes only old sent rows, in batches, archiving when asked") {
  outbox::test::scratch_database db;
  seed(db);
  outbox::db::prune_request req;
  req.older_than = 30 * 24h;
  req.batch = 1;  // forces several batches
  req.archive = true;
  const auto n = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::int64_t> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::prune_request dry = req;
    dry.dry_run = true;
    CHECK(co_await outbox::db::async_prune(c, dry) == 2);
    co_return co_await outbox::db::async_prune(c, req);
  });
  CHECK(n == 2);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_archive") == 2);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 6);
}

TEST_CASE("prune takes the longest --older-than the command line accepts without overflowing") {
  outbox::test::scratch_database db;
  seed(db);
  db.query("UPDATE event_delivery SET sent_at = now() - interval '11 years' WHERE lead_project_id = 4");
  outbox::db::prune_request req;
  req.older_than = *outbox::parse_duration_arg("10y");
  REQUIRE(req.older_than == outbox::max_duration_arg);
  const auto n = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::int64_t> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::prune_request dry = req;
    dry.dry_run = true;
    CHECK(co_await outbox::db::async_prune(c, dry) == 1);
    co_return co_await outbox::db::async_prune(c, req);
  });
  CHECK(n == 1);  // only the row sent 11 years ago
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == 2);
}

TEST_CASE("pause and resume: resume makes the destination's waiting rows due now") {
  outbox::test::scratch_database db;
  db.query("SELECT enqueue_event_delivery(1, 'meta', 'Lead', '{}'::jsonb)");
  db.query("UPDATE event_delivery SET next_attempt_at = now() + interval '5 minutes'");
  auto result = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<bool>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    std::vector<bool> out;
    const std::string meta = "meta", dest = "default", bob = "bob", why = "maintenance", still = "still maintenance";
    const bool first = co_await outbox::db::async_pause(c, meta, dest, why, bob);
    const bool again = co_await outbox::db::async_pause(c, meta, dest, still, bob);
    const auto pauses = co_await outbox::db::async_list_pauses(c);
    const bool resumed = co_await outbox::db::async_resume(c, meta, dest);
    const bool resumed_again = co_await outbox::db::async_resume(c, meta, dest);
    out = {first, again, pauses.size() == 1 && pauses[0].reason == still, resumed, resumed_again};
    co_return out;
  });
  CHECK(result == std::vector<bool>{true, false, true, true, false});
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE next_attempt_at <= now()") == 1);
}

TEST_CASE("inspect shows each attempt's dropped fields, match keys and its provider request's result") {
  outbox::test::scratch_database db;
  db.query("SELECT enqueue_event_delivery(1, 'google_data_manager', 'Lead', '{}'::jsonb, 'ads')");
  const auto id = db.scalar("SELECT id FROM event_delivery");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now()");
  db.query("INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, http_status, "
           "dropped_fields, match_keys, provider_request_id, note) VALUES "
           "($1, 1, now(), 5, 'retry', 503, ARRAY['phone: invalid_phone (too short)'], NULL, NULL, NULL), "
           "($1, 2, now(), 5, 'delivered', 200, ARRAY['phone: invalid_phone (too short)', 'gender: invalid_gender'], "
           " ARRAY['email', 'click_id'], 'req-7', 'sent again on a fresh connection')",
           {std::to_string(id)});
  // The same request id at another destination must not be taken for this one.
  db.query("INSERT INTO provider_request (provider, destination, request_id, row_count, status, detail, checks, "
           "checked_at, next_check_at) VALUES "
           "('google_data_manager', 'ads', 'req-7', 3, 'FAILURE', 'errors: 3 PROCESSING_ERROR_REASON_INVALID_GCLID', "
           " 2, now(), now()), "
           "('google_data_manager', 'other', 'req-7', 9, 'SUCCESS', '9 ingested', 1, now(), now())");
  const auto doc = outbox::test::run_async([&](auto ex) -> asio::awaitable<nlohmann::json> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_inspect(c, id);
  });
  REQUIRE(doc["attempts"].size() == 2);
  const auto& retry = doc["attempts"][0];
  CHECK(retry["dropped_fields"] == nlohmann::json::array({"phone: invalid_phone (too short)"}));
  CHECK(retry.at("match_keys").is_null());
  CHECK(retry.at("provider_request").is_null());
  const auto& sent = doc["attempts"][1];
  CHECK(sent["dropped_fields"] ==
        nlohmann::json::array({"phone: invalid_phone (too short)", "gender: invalid_gender"}));
  CHECK(sent["match_keys"] == nlohmann::json::array({"email", "click_id"}));
  CHECK(sent["provider_request_id"] == "req-7");
  CHECK(sent["note"] == "sent again on a fresh connection");
  CHECK(sent["provider_request"]["status"] == "FAILURE");
  CHECK(sent["provider_request"]["detail"] == "errors: 3 PROCESSING_ERROR_REASON_INVALID_GCLID");
  CHECK(sent["provider_request"]["row_count"] == 3);
  CHECK(sent["provider_request"]["checks"] == 2);
  CHECK(sent["provider_request"]["checked_at"].is_string());
}

// On-call statements: status, requeue, inspect, prune, pause/resume
// (the conversion report of `status` is in conversion_report_store_pgtest.cpp).
#include <doctest/doctest.h>

#include <chrono>

#include "db/operations_store.hpp"
#include "dispatcher/cli/duration_arg.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace operations_store_pgtest {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;

namespace {

// Rows in every state, as the dispatcher would leave them.
void seed(const outbox::test::scratch_database& db) {
  db.query(
      "SELECT enqueue_event_delivery(g, CASE WHEN g % 2 = 0 THEN 'meta' ELSE 'tiktok' END, 'Lead', '{}'::jsonb) "
      "FROM generate_series(1, 8) g");
  db.query(
      "UPDATE event_delivery SET state = 'dead', attempts = 12, last_error = 'HTTP 400: bad currency' "
      "WHERE lead_project_id IN (1, 2)");
  db.query("UPDATE event_delivery SET state = 'held', last_error = 'held for review' WHERE lead_project_id = 3");
  db.query(
      "UPDATE event_delivery SET state = 'sent', sent_at = now() - interval '40 days' WHERE lead_project_id IN (4, 5)");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() WHERE lead_project_id = 6");
  db.query(
      "UPDATE event_delivery SET state = 'sending', lease_owner = 'x', lease_token = gen_random_uuid(), "
      "lease_expires_at = now() - interval '1 minute' WHERE lead_project_id = 7");
}

}  // namespace

TEST_CASE("status reports counts, the oldest due row, expired leases and pauses") {
  outbox::test::scratch_database db;
  seed(db);
  db.query(
      "INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) "
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

// Issue 12, stumble 9: `sent ~0` after 12 deliveries was a whole-table estimate.
TEST_CASE("status counts sent rows exactly on a small table, lists every state, and marks an estimate as one") {
  outbox::test::scratch_database db;
  db.query("SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{}'::jsonb) FROM generate_series(1, 13) g");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() WHERE lead_project_id <= 12");
  db.query("ANALYZE event_delivery");  // the planner now knows the table is small
  const auto status = [&] {
    return outbox::test::run_async([&](auto ex) -> asio::awaitable<nlohmann::json> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      co_return co_await outbox::db::async_status(c);
    });
  };
  auto s = status();
  CHECK(s["by_state"] == nlohmann::json({{"pending", 1}, {"sending", 0}, {"dead", 0}, {"held", 0}, {"sent", 12}}));
  CHECK(s["sent_estimated"] == false);

  // A large table: the estimate minus the open rows, flagged as an estimate.
  db.query("UPDATE pg_class SET reltuples = 250000 WHERE oid = 'event_delivery'::regclass");
  s = status();
  CHECK(s["by_state"]["sent"] == 249999);
  CHECK(s["sent_estimated"] == true);
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
  CHECK(db.scalar(
            "SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'requeued' AND lease_owner = 'tester'") == 1);
  CHECK(db.query("SELECT string_agg(idempotency_key, ',' ORDER BY id) FROM event_delivery").text(0, 0) == keys_before);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'held'") == 1);
}

TEST_CASE("inspect returns the row without its lease token, and its attempts") {
  outbox::test::scratch_database db;
  seed(db);
  db.query(
      "INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, http_status, error) "
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
  db.query(
      "INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, http_status, "
      "dropped_fields, match_keys, provider_request_id, note) VALUES "
      "($1, 1, now(), 5, 'retry', 503, ARRAY['phone: invalid_phone (too short)'], NULL, NULL, NULL), "
      "($1, 2, now(), 5, 'delivered', 200, ARRAY['phone: invalid_phone (too short)', 'gender: invalid_gender'], "
      " ARRAY['email', 'click_id'], 'req-7', 'sent again on a fresh connection')",
      {std::to_string(id)});
  // The same request id at another destination must not be taken for this one.
  db.query(
      "INSERT INTO provider_request (provider, destination, request_id, row_count, status, detail, checks, "
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

namespace {

using outbox::db::changed_row;
using outbox::db::manual_settlement;
using outbox::db::row_filter;

std::vector<changed_row> settle(const outbox::test::scratch_database& db, const row_filter& f, manual_settlement how) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<changed_row>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_settle_by_hand(c, f, how, "carol@ops", "test lead from QA");
  });
}

std::vector<changed_row> requeue(const outbox::test::scratch_database& db, const row_filter& f) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<changed_row>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_requeue(c, f, "tester");
  });
}

}  // namespace

TEST_CASE("requeue --limit takes the first N matching rows by id, dry run and real") {
  outbox::test::scratch_database db;
  seed(db);  // leads 1 and 2 are dead, lead 3 held
  row_filter f;
  f.limit = 2;
  f.dry_run = true;
  const auto listed = requeue(db, f);
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].id < listed[1].id);
  f.dry_run = false;
  const auto moved = requeue(db, f);
  REQUIRE(moved.size() == 2);
  CHECK(moved[0].id == listed[0].id);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state IN ('dead', 'held')") == 1);
}

TEST_CASE("since and until: an age by the database's clock, a time PostgreSQL reads, or a clear refusal") {
  outbox::test::scratch_database db;
  seed(db);
  db.query("UPDATE event_delivery SET updated_at = now() - interval '3 hours' WHERE lead_project_id = 1");
  const auto times = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<std::optional<std::string>>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    // Named, not braced temporaries: GCC 12 mishandles those across co_await.
    const std::vector<outbox::db::time_arg> args{{.absolute = std::nullopt, .ago = 1h},
                                                 {.absolute = "2026-11-30 08:00+00", .ago = std::nullopt},
                                                 {.absolute = "yesterdayish", .ago = std::nullopt},
                                                 {.absolute = "2026-13-45", .ago = std::nullopt}};
    std::vector<std::optional<std::string>> out;
    for (const auto& t : args) out.push_back(co_await outbox::db::async_resolve_time(c, t));
    co_return out;
  });
  REQUIRE(times[0].has_value());
  REQUIRE(times[1].has_value());
  CHECK(db.scalar("SELECT count(*) WHERE $1::timestamptz = '2026-11-30 08:00+00'::timestamptz", {*times[1]}) == 1);
  CHECK_FALSE(times[2].has_value());
  CHECK_FALSE(times[3].has_value());
  row_filter f;
  f.since = times[0];  // changed in the last hour: lead 2 (dead) and lead 3 (held), not lead 1
  f.dry_run = true;
  const auto recent = requeue(db, f);
  CHECK(recent.size() == 2);
  f.since.reset();
  f.until = times[0];
  const auto older = requeue(db, f);
  REQUIRE(older.size() == 1);
  CHECK(older[0].last_error == "HTTP 400: bad currency");
}

TEST_CASE("discard and mark-sent settle pending, held and dead rows by hand, audited; sending rows are not theirs") {
  outbox::test::scratch_database db;
  seed(db);  // 1, 2 dead; 3 held; 4, 5, 6 sent; 7 sending; 8 pending
  const std::string keys_before =
      db.query("SELECT string_agg(idempotency_key || payload::text, ',' ORDER BY id) FROM event_delivery").text(0, 0);
  row_filter all;
  all.states = {"pending", "held", "dead"};
  all.provider = "meta";  // even leads: 2 (dead), 4, 6 (sent), 8 (pending)
  all.dry_run = true;
  CHECK(settle(db, all, manual_settlement::discard).size() == 2);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_attempt") == 0);  // the dry run changed nothing

  all.dry_run = false;
  const auto discarded = settle(db, all, manual_settlement::discard);
  REQUIRE(discarded.size() == 2);
  CHECK(discarded[0].previous_state == "dead");
  CHECK(discarded[1].previous_state == "pending");
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id IN (2, 8) AND state = 'dead' "
                  "AND last_error = 'discarded by carol@ops: test lead from QA'") == 2);
  CHECK(db.scalar(
            "SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'discarded' AND attempt = 0 "
            "AND lease_owner = 'carol@ops' AND error = 'discarded from pending by carol@ops: test lead from QA'") == 1);

  row_filter held_and_sending;
  held_and_sending.states = {"pending", "held", "dead"};
  held_and_sending.ids = {db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = 3"),
                          db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = 7")};
  const auto marked = settle(db, held_and_sending, manual_settlement::mark_sent);
  REQUIRE(marked.size() == 1);  // the sending row belongs to its dispatcher
  CHECK(marked[0].previous_state == "held");
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 3 AND state = 'sent' "
                  "AND sent_at > now() - interval '1 minute' AND last_error IS NULL") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 7 AND state = 'sending'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'marked_sent' "
                  "AND error = 'marked sent from held by carol@ops: test lead from QA'") == 1);
  CHECK(
      db.query("SELECT string_agg(idempotency_key || payload::text, ',' ORDER BY id) FROM event_delivery").text(0, 0) ==
      keys_before);

  row_filter sent_rows;
  sent_rows.states = {"sent"};
  CHECK_THROWS_AS(settle(db, sent_rows, manual_settlement::discard), std::invalid_argument);
}

TEST_CASE("prune --state dead removes dead rows by when they died; the archive is pruned by archived_at") {
  outbox::test::scratch_database db;
  seed(db);
  db.query("UPDATE event_delivery SET updated_at = now() - interval '100 days' WHERE lead_project_id IN (1, 3)");
  outbox::db::prune_request req;
  req.state = outbox::db::prune_state::dead;
  req.older_than = 90 * 24h;
  req.archive = true;
  const auto counts = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<std::int64_t>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    std::vector<std::int64_t> out;
    auto dry = req;
    dry.dry_run = true;
    out.push_back(co_await outbox::db::async_prune(c, dry));
    out.push_back(co_await outbox::db::async_prune(c, req));
    co_return out;
  });
  CHECK(counts == std::vector<std::int64_t>{1, 1});  // lead 1; lead 3 is held, lead 2 died recently
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'dead'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 3 AND state = 'held'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_archive WHERE lead_project_id = 1") == 1);

  db.query(
      "INSERT INTO event_delivery_archive (id, lead_project_id, provider, destination, event_name, "
      "idempotency_key, payload, state, archived_at) "
      "SELECT id, lead_project_id, provider, destination, event_name, idempotency_key, payload, state, "
      "now() - interval '400 days' FROM event_delivery d WHERE lead_project_id IN (4, 5)");
  const auto archive = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<std::int64_t>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    std::vector<std::int64_t> out;
    out.push_back(co_await outbox::db::async_prune_archive(c, 365 * 24h, true));
    out.push_back(co_await outbox::db::async_prune_archive(c, 365 * 24h, false));
    co_return out;
  });
  CHECK(archive == std::vector<std::int64_t>{2, 2});
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_archive") == 1);  // archived just now: kept
}

TEST_CASE("inspect finds the rows of a lead and the row of an idempotency key") {
  outbox::test::scratch_database db;
  seed(db);
  db.query("SELECT enqueue_event_delivery(4, 'tiktok', 'Purchase', '{}'::jsonb)");
  const std::string key = db.query("SELECT idempotency_key FROM event_delivery WHERE lead_project_id = 5").text(0, 0);
  const auto found = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<std::vector<std::int64_t>>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    const std::vector<outbox::db::row_lookup> lookups{
        {.lead = 4, .key = std::nullopt}, {.lead = std::nullopt, .key = key}, {.lead = 999, .key = std::nullopt}};
    std::vector<std::vector<std::int64_t>> out;
    for (const auto& l : lookups) out.push_back(co_await outbox::db::async_find_rows(c, l));
    co_return out;
  });
  CHECK(found[0].size() == 2);
  CHECK(found[0][0] < found[0][1]);
  REQUIRE(found[1].size() == 1);
  CHECK(found[1][0] == db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = 5"));
  CHECK(found[2].empty());
}

TEST_CASE("a session lock_timeout turns a wait behind a migration into SQLSTATE 55P03; the label names the database") {
  outbox::test::scratch_database db;
  seed(db);
  const auto outcome = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::pair<std::string, std::string>> {
    auto holder = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_await holder.async_exec_script("BEGIN; LOCK TABLE event_delivery IN ACCESS EXCLUSIVE MODE", 5s);
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_await outbox::db::async_set_lock_timeout(c, 200ms);
    std::string sqlstate;
    try {
      (void)co_await outbox::db::async_status(c);
    } catch (const outbox::db::error& e) {
      sqlstate = e.sqlstate();
    }
    co_return std::pair{sqlstate, co_await outbox::db::async_database_label(c)};
  });
  CHECK(outcome.first == "55P03");
  CHECK(outcome.second.starts_with("\"" + db.name() + "\" on "));
}

TEST_CASE("the oldest-due gauge leaves out paused destinations: their rows wait on purpose") {
  outbox::test::scratch_database db;
  db.query("SELECT enqueue_event_delivery(1, 'webhook', 'Lead', '{}'::jsonb, 'on_call')");
  db.query("SELECT enqueue_event_delivery(2, 'webhook', 'Lead', '{}'::jsonb, 'automatic')");
  db.query("UPDATE event_delivery SET next_attempt_at = now() - interval '10 minutes'");
  const auto oldest = [&](const std::vector<std::string>& paused) {
    const auto gauges = outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::queue_gauges> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      co_return co_await outbox::db::async_queue_gauges(c, paused);
    });
    return gauges.oldest_due_seconds;
  };
  CHECK(oldest({}) >= 600);
  db.query(
      "INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) "
      "VALUES ('webhook', 'on_call', 'maintenance', 'alice')");
  CHECK(oldest({}) >= 600);  // the other destination's row is still due
  CHECK(oldest({"webhook/automatic"}) ==
        0);  // on-call's pause and this process's own: nothing due that anyone would claim
}

TEST_CASE("the queue gauges count each state over every destination; sent rows are not counted") {
  outbox::test::scratch_database db;
  seed(db);  // 1, 2 dead; 3 held; 4, 5, 6 sent; 7 sending; 8 pending (meta and tiktok)
  db.query("SELECT enqueue_event_delivery(9, 'webhook', 'Lead', '{}'::jsonb)");
  const auto gauges = outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::queue_gauges> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_queue_gauges(c, {});
  });
  const std::map<std::string, std::int64_t> expected{{"pending", 2}, {"sending", 1}, {"dead", 2}, {"held", 1}};
  CHECK(gauges.rows_by_state == expected);
}

TEST_CASE("--lead narrows requeue, discard and mark-sent to one lead's rows, as inspect --lead shows them") {
  outbox::test::scratch_database db;
  seed(db);  // 1, 2 dead; 3 held; 4, 5, 6 sent; 7 sending; 8 pending
  db.query("SELECT enqueue_event_delivery(2, 'webhook', 'Lead', '{}'::jsonb)");  // lead 2 has a pending row too
  row_filter lead2;
  lead2.lead = 2;
  lead2.dry_run = true;
  lead2.states = {"pending", "held", "dead"};
  const auto would = settle(db, lead2, manual_settlement::discard);
  REQUIRE(would.size() == 2);  // its dead meta row and its pending webhook row; no other lead's
  CHECK(would[0].provider == "meta");
  CHECK(would[1].provider == "webhook");
  lead2.dry_run = false;
  lead2.states = {"dead"};
  const auto requeued = requeue(db, lead2);
  REQUIRE(requeued.size() == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'dead'") == 1);  // lead 1's row stays dead
  row_filter nobody;
  nobody.lead = 99;
  nobody.states = {"pending", "held", "dead"};
  CHECK(settle(db, nobody, manual_settlement::mark_sent).empty());  // a lead without rows matches nothing
}

}  // namespace operations_store_pgtest

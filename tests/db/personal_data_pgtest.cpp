// Personal data in the database (sql/0013_personal_data.sql, db/personal_data_store.hpp):
// one list with the code's, erased wherever it sits, a lead forgotten in every
// state, final rows erased once their retention is over, erased rows never requeued.
#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>

#include "db/delivery_store.hpp"
#include "db/operations_store.hpp"
#include "db/personal_data_store.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "providers/crypto.hpp"
#include "providers/personal_data.hpp"
#include "tests/support/must.hpp"
#include "tests/support/notify_probe.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

namespace personal_data_pgtest {

using outbox::test::must;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;

namespace {

constexpr const char* mary =
    R"({"event_time": 1767225600, "value": 19.99, "currency": "EUR", "email": "mary@example.com",
        "phone": "+84 912 345 678", "first_name": "Mary", "fbc": "fb.1.1.abc", "client_ip": "203.0.113.7",
        "extra": {"meta": {"user_data": {"em": ["5f1c"]}, "custom_data": {"content_name": "Plan A"}},
                  "tiktok": {"context": {"user": {"email": "x"}, "ad": {"callback": "ttclid-1"}}}}})";

void enqueue(const outbox::test::scratch_database& db, int lead, const std::string& event,
             const std::string& payload = mary) {
  db.query("SELECT enqueue_event_delivery($1, 'webhook', $2, $3::jsonb)", {std::to_string(lead), event, payload});
}

std::string payload_of(const outbox::test::scratch_database& db, const std::string& where) {
  return std::string(
      outbox::test::sql(db.conninfo(), "SELECT payload::text FROM event_delivery WHERE " + where).text(0, 0));
}

std::vector<std::string> column(const outbox::test::scratch_database& db, const std::string& query,
                                outbox::db::params args = {}) {
  const auto r = outbox::test::sql(db.conninfo(), query, std::move(args));
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.text(i, 0));
  return out;
}

// Everything the tables hold, as text: what a pg_dump of them would show.
std::string all_text(const outbox::test::scratch_database& db) {
  std::string out;
  for (const auto& t : {"event_delivery", "event_delivery_attempt", "event_delivery_archive", "outbox_erasure"}) {
    for (const auto& row : column(db, std::string("SELECT t::text FROM ") + t + " t")) out += row + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("personal data: the database's list is the code's, and erasing reaches every depth") {
  outbox::test::scratch_database db;
  std::set<std::string> code;
  for (const auto f : outbox::providers::personal_event_fields) code.emplace(f);
  for (const auto f : outbox::providers::personal_platform_fields) code.emplace(f);
  std::set<std::string> database;
  for (const auto& f : column(db, "SELECT unnest(outbox_personal_fields())")) database.insert(f);
  CHECK(database == code);

  const auto erased = column(db, "SELECT outbox_erase_personal_data($1::jsonb)::text", {mary});
  const auto& e = erased.front();
  for (const auto* secret : {"mary@example.com", "912 345", "Mary", "fb.1.1.abc", "203.0.113.7", "5f1c", "ttclid-1"})
    CHECK_MESSAGE(e.find(secret) == std::string::npos, secret);
  // What stays: the field names (erased), the time, value and currency, and what is not personal.
  CHECK(e.find(R"("email": "[erased]")") != std::string::npos);
  CHECK(e.find(R"("user_data": "[erased]")") != std::string::npos);
  CHECK(e.find("1767225600") != std::string::npos);
  CHECK(e.find("19.99") != std::string::npos);
  CHECK(e.find("EUR") != std::string::npos);
  CHECK(e.find("Plan A") != std::string::npos);
}

TEST_CASE("forget: every row of the lead loses its data, unsent rows close, the in-flight settle restores nothing") {
  outbox::test::scratch_database db;
  enqueue(db, 7, "Lead");                                                                // will be in flight
  enqueue(db, 7, "Contact");                                                             // pending
  enqueue(db, 7, "Schedule");                                                            // sent
  enqueue(db, 7, "Purchase");                                                            // dead
  enqueue(db, 8, "Lead", R"({"event_time": 1767225600, "email": "john@example.com"})");  // another lead
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() WHERE event_name = 'Schedule'");
  db.query("UPDATE event_delivery SET state = 'dead', last_error = 'Meta error 100' WHERE event_name = 'Purchase'");
  db.query(
      "INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, error, "
      "response_excerpt) SELECT id, 1, now(), 5, 'rejected', 'bad email mary@example.com', "
      "'{\"echo\": \"mary@example.com\"}' FROM event_delivery WHERE event_name = 'Purchase'");
  const auto in_flight = outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::claimed_row> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::claim_request req;
    req.owner = "a";
    req.token = outbox::random_uuid();
    req.limit = 1;
    auto rows = must(co_await outbox::db::async_claim(c, req));
    REQUIRE(rows.size() == 1);
    co_return rows.front();
  });
  REQUIRE(in_flight.event_name == "Lead");
  REQUIRE(in_flight.lead_project_id == 7);

  const auto forget = [&](bool dry_run) {
    return outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::forget_report> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      co_return co_await outbox::db::async_forget_lead(c, 7, "dpo@crm", dry_run);
    });
  };
  outbox::test::notify_probe probe(db.conninfo());
  const auto before = all_text(db);
  const auto dry = forget(true);
  CHECK(all_text(db) == before);  // a dry run changes nothing
  CHECK(probe.payloads_since_last().empty());
  const auto done = forget(false);
  // Dispatchers holding a row of the lead for its turn drop it (engine_personal_data_test).
  CHECK(probe.payloads_since_last() == std::vector<std::string>{"outbox:forgotten:7"});
  CHECK(dry.rows_erased == 4);
  CHECK(dry.rows_closed == 2);
  CHECK(dry.rows_in_flight == 1);
  CHECK(done.rows_erased == dry.rows_erased);
  CHECK(done.rows_closed == dry.rows_closed);

  // The in-flight request's answer comes back: nothing changes, nothing of it is logged.
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::settlement s;
    s.id = in_flight.id;
    s.lease_token = in_flight.lease_token;
    s.state = outbox::db::settle_state::sent;
    s.attempt = in_flight.attempts;
    s.started_at = std::chrono::system_clock::now();
    s.outcome = "delivered";
    s.http_status = 200;
    s.response_excerpt = R"({"echo": "mary@example.com"})";
    (void)must(co_await outbox::db::async_settle(c, "a", std::span(&s, 1)));
  });
  const auto text = all_text(db);
  for (const auto& secret :
       {std::string("mary@example.com"), outbox::providers::hex_encode(outbox::providers::sha256("mary@example.com")),
        std::string("912 345"), std::string("84912345678")})
    CHECK_MESSAGE(text.find(secret) == std::string::npos, secret);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 7 AND state = 'dead' "
                  "AND last_error = 'forgotten on request'") == 2);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 7 AND state = 'sent'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE personal_data_erased_why = 'forgotten on request'") == 4);
  CHECK(payload_of(db, "lead_project_id = 8").find("john@example.com") != std::string::npos);  // untouched
  CHECK(db.scalar("SELECT count(*) FROM outbox_erasure WHERE lead_project_id = 7 AND requested_by = 'dpo@crm' "
                  "AND rows_erased = 4 AND rows_closed = 2") == 1);
  // The lead may come back: a new event is enqueued; the old ones keep their idempotency.
  CHECK(column(db, "SELECT enqueue_event_delivery(7, 'webhook', 'Return', '{}'::jsonb)::text").front() == "true");
  CHECK(column(db, "SELECT enqueue_event_delivery(7, 'webhook', 'Lead', '{}'::jsonb)::text").front() == "false");
  // Requeue refuses them, and says how many it left out.
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::row_filter f;
    f.lead = 7;
    const auto requeued = co_await outbox::db::async_requeue(c, f, "oncall");
    CHECK(requeued.empty());
    CHECK(co_await outbox::db::async_count_erased(c, f) == 3);  // the dead ones: two closed, one that was dead
  });
}

TEST_CASE("retention: final rows past it lose their data in batches; open and recent rows keep it") {
  outbox::test::scratch_database db;
  enqueue(db, 1, "Old sent");
  enqueue(db, 2, "New sent");
  enqueue(db, 3, "Old dead");
  enqueue(db, 4, "Pending");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() - interval '2 hours' WHERE lead_project_id = 1");
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() WHERE lead_project_id = 2");
  db.query(
      "UPDATE event_delivery SET state = 'dead', updated_at = now() - interval '3 days' WHERE lead_project_id = 3");
  db.query("UPDATE event_delivery SET next_attempt_at = now() - interval '30 days' WHERE lead_project_id = 4");
  const auto erase = [&](int batch) {
    return outbox::test::run_async([&](auto ex) -> asio::awaitable<std::int64_t> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      outbox::db::retention_request req{3600s, 2 * 86400s, batch};
      co_return must(co_await outbox::db::async_erase_expired_personal_data(c, req));
    });
  };
  CHECK(erase(1) == 1);  // a batch of one: the oldest first (the dead row, 3 days)
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 3 AND personal_data_erased_at "
                  "IS NOT NULL AND personal_data_erased_why = 'retention'") == 1);
  CHECK(erase(10) == 1);  // the sent row of 2 hours ago
  CHECK(erase(10) == 0);
  CHECK(payload_of(db, "lead_project_id = 1").find("mary@example.com") == std::string::npos);
  CHECK(payload_of(db, "lead_project_id = 2").find("mary@example.com") != std::string::npos);  // sent just now
  CHECK(payload_of(db, "lead_project_id = 4").find("mary@example.com") != std::string::npos);  // still to send
  CHECK(db.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'event_delivery_personal_data_idx'") == 1);
}

}  // namespace personal_data_pgtest

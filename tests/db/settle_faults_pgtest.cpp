// The settle and claim statements under the faults the engine must survive:
// hostile text, a settle sent twice because its answer was lost, claims whose
// answer was lost, paused destinations, and sweeps from a bare shell.
#include <doctest/doctest.h>

#include <chrono>

#include "db/delivery_store.hpp"
#include "db/fleet_store.hpp"
#include "db/text_param.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "tests/support/must.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace settle_faults_pgtest {

using outbox::test::must;

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace db = outbox::db;
using db::connection;

namespace {

db::claim_request claim_req(const std::string& owner, int limit) {
  db::claim_request r;
  r.owner = owner;
  r.token = outbox::random_uuid();
  r.limit = limit;
  return r;
}

db::settlement outcome_for(const db::claimed_row& row, db::settle_state state, std::string error) {
  db::settlement s;
  s.id = row.id;
  s.lease_token = row.lease_token;
  s.state = state;
  s.attempt = row.attempts;
  s.started_at = std::chrono::system_clock::now();
  s.outcome = state == db::settle_state::sent ? "delivered" : "dead";
  s.error = std::move(error);
  return s;
}

void enqueue(const outbox::test::scratch_database& d, int n, const std::string& destination = "default") {
  d.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead' || $2, jsonb_build_object('n', g), $2) "
      "FROM generate_series(1, $1) g",
      {std::to_string(n), destination});
}

}  // namespace

TEST_CASE("clean_text: valid UTF-8, no NUL, cut on a character boundary") {
  CHECK(db::clean_text("plain", 100) == "plain");
  CHECK(db::clean_text(std::string("a\0b", 3), 100) == "ab");
  CHECK(db::clean_text("bad \xC3 byte", 100) == "bad \xEF\xBF\xBD byte");
  CHECK(db::clean_text("\xED\xA0\x80", 100) == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate is invalid
  // 'é' is two bytes (4 and 5): a cut at 5 must not split it.
  CHECK(db::clean_text("abcdé and more", 8) == "abcd...");
  CHECK(db::clean_text("abcdéfghij", 10) == "abcdéf...");
  CHECK(db::clean_text("abcdéfgh", 9) == "abcdéfgh");
  CHECK(db::utf8_boundary("abcdé", 5) == 4);
}

TEST_CASE("finding 1: a NUL, invalid UTF-8 or a split character in an outcome never fails the settle batch") {
  outbox::test::scratch_database d;
  enqueue(d, 4);
  const auto report = outbox::test::run_async([&](auto ex) -> asio::awaitable<db::settle_report> {
    auto c = co_await connection::async_connect(ex, d.conninfo(), 5s);
    auto rows = must(co_await db::async_claim(c, claim_req("a", 4)));
    REQUIRE(rows.size() == 4);
    std::string sixty(59, 'x');
    std::vector<db::settlement> batch{
        outcome_for(rows[0], db::settle_state::dead, std::string("oauth said \0 nothing", 20)),
        outcome_for(rows[1], db::settle_state::dead, "truncated \xC3"),
        outcome_for(rows[2], db::settle_state::dead, sixty + "\xC3\xA9 cut at byte 60"),
        outcome_for(rows[3], db::settle_state::sent, "")};
    batch[0].response_excerpt = std::string("{\"error\":\"\0\"}", 13);
    co_return must(co_await db::async_settle(c, "a", batch));
  });
  CHECK(report.applied.size() == 4);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE state = 'dead'") == 3);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE last_error = 'oauth said  nothing'") == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery_attempt") == 4);
}

TEST_CASE("a settle sent again after its answer was lost is recognised: no second change, no second log row") {
  outbox::test::scratch_database d;
  enqueue(d, 2);
  const auto [first, second] =
      outbox::test::run_async([&](auto ex) -> asio::awaitable<std::pair<db::settle_report, db::settle_report>> {
        auto c = co_await connection::async_connect(ex, d.conninfo(), 5s);
        auto rows = must(co_await db::async_claim(c, claim_req("a", 2)));
        std::vector<db::settlement> batch{outcome_for(rows[0], db::settle_state::sent, ""),
                                          outcome_for(rows[1], db::settle_state::dead, "HTTP 400")};
        auto once = must(co_await db::async_settle(c, "a", batch));
        auto again = must(co_await db::async_settle(c, "a", batch));
        co_return std::pair{once, again};
      });
  CHECK(first.applied.size() == 2);
  CHECK(second.applied.empty());
  CHECK(second.already_applied.size() == 2);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery_attempt") == 2);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'lease_lost'") == 0);
}

// The statement looks for earlier settles only among the rows it did not change itself.
TEST_CASE("a settle that mixes an already recorded row with new ones applies the new ones and reports the old") {
  outbox::test::scratch_database d;
  enqueue(d, 3);
  const auto report = outbox::test::run_async([&](auto ex) -> asio::awaitable<db::settle_report> {
    auto c = co_await connection::async_connect(ex, d.conninfo(), 5s);
    auto rows = must(co_await db::async_claim(c, claim_req("a", 3)));
    const std::vector<db::settlement> first{outcome_for(rows[0], db::settle_state::sent, "")};
    (void)must(co_await db::async_settle(c, "a", first));
    const std::vector<db::settlement> mixed{outcome_for(rows[1], db::settle_state::sent, ""),
                                            outcome_for(rows[0], db::settle_state::sent, ""),
                                            outcome_for(rows[2], db::settle_state::dead, "HTTP 400")};
    co_return must(co_await db::async_settle(c, "a", mixed));
  });
  CHECK(report.applied.size() == 2);
  REQUIRE(report.already_applied.size() == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE id = " + std::to_string(report.already_applied[0]) +
                 " AND state = 'sent'") == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == 2);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery_attempt") == 3);  // one per attempt, none twice
  CHECK(d.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'lease_lost'") == 0);
}

TEST_CASE("rows of a claim whose answer was lost are released by owner and unknown token, at once") {
  outbox::test::scratch_database d;
  enqueue(d, 3);
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, d.conninfo(), 5s);
    auto known = must(co_await db::async_claim(c, claim_req("me", 1)));
    (void)must(co_await db::async_claim(c, claim_req("me", 1)));     // its answer "was lost"
    (void)must(co_await db::async_claim(c, claim_req("other", 1)));  // another dispatcher's
    std::vector<std::string> held{known.front().lease_token};
    const auto released = must(co_await db::async_release_orphans(c, "me", held));
    CHECK(released.size() == 1);
  });
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending' AND lease_owner = 'me'") == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending' AND lease_owner = 'other'") == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE state = 'pending' AND attempts = 0") == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery_attempt") == 0);
}

TEST_CASE("finding 6: the claim and the next-due query leave paused destinations alone; a probe takes one row") {
  outbox::test::scratch_database d;
  enqueue(d, 50, "paused");
  enqueue(d, 2, "default");
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, d.conninfo(), 5s);
    auto req = claim_req("a", 100);
    req.skip_destinations = {"webhook/paused"};
    auto rows = must(co_await db::async_claim(c, req));
    CHECK(rows.size() == 2);
    for (const auto& r : rows) CHECK(r.destination == "default");
    std::vector<std::string> skip{"webhook/paused"};
    const auto next = must(co_await db::async_next_due(c, skip));
    CHECK(next.has_value());  // only the leases of the two claimed rows
    CHECK(*next > 20s);
    auto probe = claim_req("a", 1);
    probe.only_destination = "webhook/paused";
    const auto one = must(co_await db::async_claim(c, probe));
    REQUIRE(one.size() == 1);
    CHECK(one.front().destination == "paused");
  });
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'paused' AND attempts = 0") == 49);
}

TEST_CASE("finding 9: sweep follows the policies dispatchers recorded, whatever the caller's configuration") {
  outbox::test::scratch_database d;
  enqueue(d, 2, "hold");
  enqueue(d, 2, "default");
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, d.conninfo(), 5s);
    std::vector<db::destination_policy> policies{{"webhook", "hold", true, 12}, {"webhook", "default", false, 3}};
    (void)must(co_await db::async_record_policies(c, "dispatcher-1", policies));
    (void)must(co_await db::async_claim(c, claim_req("crashed", 4)));
    (void)co_await c.async_query(
        "UPDATE event_delivery SET lease_expires_at = now() - interval '1 minute', "
        "attempts = CASE WHEN lead_project_id = 1 AND destination = 'default' THEN 3 ELSE 1 END",
        {}, 5s);
    db::sweep_request bare;  // a shell with only DATABASE_URL: no hold list, default attempts
    const auto swept = must(co_await db::async_sweep(c, bare));
    CHECK(swept.size() == 4);
    for (const auto& r : swept) CHECK(r.policy_known);
  });
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'hold' AND state = 'held'") == 2);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'default' AND state = 'dead'") == 1);
  CHECK(d.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'default' AND state = 'pending'") == 1);
}

TEST_CASE("finding 10: engine connections carry a server-side statement_timeout and an application_name") {
  outbox::test::scratch_database d;
  const auto [timeout, name, sqlstate] =
      outbox::test::run_async([&](auto ex) -> asio::awaitable<std::tuple<std::string, std::string, std::string>> {
        db::connect_options options;
        options.application_name = "outbox-dispatcher test";
        options.statement_timeout = 300ms;
        auto c = co_await connection::async_connect(ex, d.conninfo(), 5s, options);
        auto t = co_await c.async_query("SHOW statement_timeout", {}, 5s);
        auto n = co_await c.async_query("SELECT current_setting('application_name')", {}, 5s);
        auto slow = co_await db::async_try(c.async_query("SELECT pg_sleep(5)", {}, 10s));
        co_return std::tuple{std::string(t.text(0, 0)), std::string(n.text(0, 0)),
                             slow ? std::string("none") : slow.error().sqlstate()};
      });
  CHECK(timeout == "300ms");
  CHECK(name == "outbox-dispatcher test");
  CHECK(sqlstate == "57014");  // query_canceled by statement_timeout, on the server
}

TEST_CASE("finding 7: a NUL or invalid UTF-8 in a pause reason reaches the heartbeat cleaned, never refused") {
  outbox::test::scratch_database database;
  db::heartbeat beat;
  beat.instance = "finding-7";
  beat.version = std::string("dispatcher \0 0.1.0", 19);
  beat.host = "host";
  beat.pid = 1;
  beat.started_at = std::chrono::system_clock::now();
  // A Google Ads errorCode with a NUL and a cut character, as a hostile answer may carry them.
  nlohmann::json pause = nlohmann::json::object();
  pause["provider"] = "google_ads";
  pause["destination"] = "default";
  // 20 bytes: the embedded NUL counts, the literal's final one does not.
  pause["reason"] = std::string("errorCode BAD\0CODE \xC3", 20);
  pause["until"] = "";
  beat.automatic_pauses.push_back(pause);
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, database.conninfo(), 5s);
    must(co_await db::async_beat(c, beat));
    must(co_await db::async_beat(c, beat));  // and again: the next beat is not refused either
  });
  const auto r = database.query(
      "SELECT automatic_pauses->0->>'reason', version FROM outbox_dispatcher_heartbeat WHERE instance = 'finding-7'");
  REQUIRE(r.rows() == 1);
  const std::string reason{r.text(0, 0)};
  CHECK(reason.starts_with("errorCode BADCODE"));
  CHECK(reason.find('\0') == std::string::npos);
  CHECK(std::string(r.text(0, 1)) == "dispatcher  0.1.0");
}

}  // namespace settle_faults_pgtest

// The engine's statements against a real database: claim, fencing, expiry, sweep.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <set>

#include "db/delivery_store.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "tests/support/must.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace delivery_store_pgtest {

using outbox::test::must;

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;

namespace {

outbox::db::claim_request claim_req(const std::string& owner, int limit, std::chrono::seconds lease = 30s) {
  outbox::db::claim_request r;
  r.owner = owner;
  r.token = outbox::random_uuid();
  r.lease = lease;
  r.limit = limit;
  return r;
}

outbox::db::settlement sent(const outbox::db::claimed_row& row) {
  outbox::db::settlement s;
  s.id = row.id;
  s.lease_token = row.lease_token;
  s.state = outbox::db::settle_state::sent;
  s.attempt = row.attempts;
  s.started_at = std::chrono::system_clock::now();
  s.outcome = "delivered";
  s.http_status = 200;
  return s;
}

void enqueue(const outbox::test::scratch_database& db, int n) {
  db.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', jsonb_build_object('n', g)) FROM generate_series(1, $1) g",
      {std::to_string(n)});
}

}  // namespace

TEST_CASE("claims take due rows once, under a lease, and SKIP LOCKED keeps claimers apart") {
  outbox::test::scratch_database db;
  enqueue(db, 10);
  auto [a, b] = outbox::test::run_async(
      [&](auto ex)
          -> asio::awaitable<std::pair<std::vector<outbox::db::claimed_row>, std::vector<outbox::db::claimed_row>>> {
        auto c1 = co_await connection::async_connect(ex, db.conninfo(), 5s);
        auto c2 = co_await connection::async_connect(ex, db.conninfo(), 5s);
        auto first = must(co_await outbox::db::async_claim(c1, claim_req("a", 6)));
        auto second = must(co_await outbox::db::async_claim(c2, claim_req("b", 6)));
        co_return std::pair{first, second};
      });
  CHECK(a.size() == 6);
  CHECK(b.size() == 4);
  std::set<std::int64_t> ids;
  for (const auto& r : a) ids.insert(r.id);
  for (const auto& r : b) ids.insert(r.id);
  CHECK(ids.size() == 10);
  CHECK(a.front().attempts == 1);
  CHECK_FALSE(a.front().reclaimed);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending' AND lease_owner = 'a'") == 6);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lease_expires_at > now() + interval '25 seconds'") == 10);
}

TEST_CASE("a settle with a stale lease token changes nothing and is logged as lease_lost") {
  outbox::test::scratch_database db;
  enqueue(db, 1);
  const auto settled = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::pair<std::size_t, std::size_t>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    auto rows = must(co_await outbox::db::async_claim(c, claim_req("a", 1, 1s)));
    // The lease expires; another worker takes the row over with a new token.
    (void)co_await c.async_query("UPDATE event_delivery SET lease_expires_at = now() - interval '1 second'", {}, 5s);
    auto taken = must(co_await outbox::db::async_claim(c, claim_req("b", 1)));
    std::vector<outbox::db::settlement> stale{sent(rows.front())};
    auto stale_result = must(co_await outbox::db::async_settle(c, "a", stale));
    std::vector<outbox::db::settlement> fresh{sent(taken.front())};
    auto fresh_result = must(co_await outbox::db::async_settle(c, "b", fresh));
    CHECK(taken.front().reclaimed);
    CHECK(taken.front().attempts == 2);
    co_return std::pair{stale_result.applied.size(), fresh_result.applied.size()};
  });
  CHECK(settled.first == 0);
  CHECK(settled.second == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'lease_lost' AND lease_owner = 'a'") ==
        1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'delivered' AND lease_owner = 'b'") ==
        1);
}

TEST_CASE("retry settles schedule the next attempt; refunds do not count; renew and release are fenced") {
  outbox::test::scratch_database db;
  enqueue(db, 3);
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    auto rows = must(co_await outbox::db::async_claim(c, claim_req("a", 3)));
    REQUIRE(rows.size() == 3);
    auto retry = sent(rows[0]);
    retry.state = outbox::db::settle_state::pending;
    retry.retry_delay = 60s;
    retry.outcome = "retry";
    retry.error = "HTTP 503";
    auto refund = sent(rows[1]);
    refund.state = outbox::db::settle_state::pending;
    refund.refund_attempt = true;
    refund.outcome = "paused";
    std::vector<outbox::db::settlement> batch{retry, refund};
    auto done = must(co_await outbox::db::async_settle(c, "a", batch));
    CHECK(done.applied.size() == 2);

    std::vector<std::int64_t> ids{rows[2].id};
    std::vector<std::string> good{rows[2].lease_token};
    std::vector<std::string> bad{outbox::random_uuid()};
    CHECK(must(co_await outbox::db::async_renew(c, ids, bad, 30s)) == 0);
    CHECK(must(co_await outbox::db::async_renew(c, ids, good, 300s)) == 1);
    // Rows under our name with a token we do not hold are orphans of a lost claim.
    CHECK(must(co_await outbox::db::async_release_orphans(c, "a", good)).empty());
    CHECK(must(co_await outbox::db::async_release_orphans(c, "a", bad)) == ids);
  });
  CHECK(db.scalar("SELECT attempts FROM event_delivery WHERE last_error = 'HTTP 503'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE last_error = 'HTTP 503' "
                  "AND next_attempt_at > now() + interval '50 seconds'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'pending' AND attempts = 0") == 2);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending'") == 0);
}

TEST_CASE("sweep resets only expired leases and kills rows out of attempts") {
  outbox::test::scratch_database db;
  enqueue(db, 3);
  const auto swept = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<outbox::db::swept_row>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)must(co_await outbox::db::async_claim(c, claim_req("crashed", 3)));
    (void)co_await c.async_query(
        "UPDATE event_delivery SET lease_expires_at = now() - interval '1 minute' "
        "WHERE lead_project_id IN (1, 2)",
        {}, 5s);
    (void)co_await c.async_query("UPDATE event_delivery SET attempts = 12 WHERE lead_project_id = 2", {}, 5s);
    outbox::db::sweep_request dry;
    dry.dry_run = true;
    auto listed = must(co_await outbox::db::async_sweep(c, dry));
    CHECK(listed.size() == 2);
    outbox::db::sweep_request req;
    co_return must(co_await outbox::db::async_sweep(c, req));
  });
  REQUIRE(swept.size() == 2);
  CHECK(swept[0].previous_owner == "crashed");
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 1 AND state = 'pending'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 2 AND state = 'dead'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 3 AND state = 'sending'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'lease_expired'") == 2);
}

TEST_CASE("lease renewal never waits for a row another session has locked (no deadlock with a concurrent settle)") {
  outbox::test::scratch_database db;
  enqueue(db, 2);
  outbox::test::run_async(
      [&](auto ex) -> asio::awaitable<void> {
        auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
        auto settler = co_await connection::async_connect(ex, db.conninfo(), 5s);
        auto rows = must(co_await outbox::db::async_claim(c, claim_req("a", 2, 30s)));
        REQUIRE(rows.size() == 2);
        // The settle connection holds row 0 in an open transaction, as a settle in progress does.
        (void)co_await settler.async_query("BEGIN", {}, 5s);
        outbox::db::params lock_args{std::to_string(rows[0].id)};
        (void)co_await settler.async_query("SELECT 1 FROM event_delivery WHERE id = $1 FOR UPDATE",
                                           std::move(lock_args), 5s);
        std::vector<std::int64_t> ids{rows[0].id, rows[1].id};
        std::vector<std::string> tokens{rows[0].lease_token, rows[1].lease_token};
        // Returns at once, renewing only the row nobody holds (it would otherwise wait for the lock).
        const auto t0 = std::chrono::steady_clock::now();
        CHECK(must(co_await outbox::db::async_renew(c, ids, tokens, 300s)) == 1);
        CHECK(std::chrono::steady_clock::now() - t0 < 3s);
        (void)co_await settler.async_query("COMMIT", {}, 5s);
        CHECK(must(co_await outbox::db::async_renew(c, ids, tokens, 300s)) == 2);
      },
      20s);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lease_expires_at > now() + interval '200 seconds'") == 2);
}

TEST_CASE("a claim that is not full says when the next row is due, as the next-due query would") {
  outbox::test::scratch_database db;
  enqueue(db, 3);
  db.query("UPDATE event_delivery SET next_attempt_at = now() + interval '30 seconds' WHERE lead_project_id = 3");
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    // Full (2 due rows, limit 1): the backlog goes on, so no next-due row.
    auto full = must(co_await outbox::db::async_claim_batch(c, claim_req("a", 1)));
    CHECK(full.rows.size() == 1);
    CHECK_FALSE(full.next_due.has_value());
    // Not full: the row claimed now is left out; the row due in 30 s is what is next.
    auto rest = must(co_await outbox::db::async_claim_batch(c, claim_req("a", 10)));
    CHECK(rest.rows.size() == 1);
    REQUIRE(rest.next_due.has_value());
    REQUIRE(rest.next_due->has_value());
    const auto ms = (*rest.next_due)->count();
    CHECK(ms > 25000);
    CHECK(ms <= 30000);
    auto query = must(co_await outbox::db::async_next_due(c, {}));
    REQUIRE(query.has_value());
    CHECK(std::abs(query->count() - ms) < 2000);  // the separate statement agrees
    // A paused destination's rows are not waited for.
    auto req = claim_req("a", 10);
    req.skip_destinations = {"webhook/default"};
    auto skipping = must(co_await outbox::db::async_claim_batch(c, req));
    CHECK(skipping.rows.empty());
    REQUIRE(skipping.next_due.has_value());
    CHECK_FALSE(skipping.next_due->has_value());
    // A probe (one destination) does not ask.
    auto probe = claim_req("a", 10);
    probe.only_destination = "webhook/default";
    CHECK_FALSE(must(co_await outbox::db::async_claim_batch(c, probe)).next_due.has_value());
  });
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sending'") == 2);
}

}  // namespace delivery_store_pgtest

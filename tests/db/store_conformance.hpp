#pragma once
// One conformance suite for every delivery store (river's riverdrivertest): the
// same cases run against PostgreSQL (tests/db/pg_store_conformance_pgtest.cpp)
// and the in-memory store the engine tests use
// (tests/db/memory_store_conformance_test.cpp), so whatever one allows the
// other must too. Each case is a doctest template over a harness
// (tests/support/store_harness.hpp); a program runs them with
// OUTBOX_STORE_CONFORMANCE(harness).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "db/store_port.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "tests/support/store_harness.hpp"

namespace store_conformance {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace db = outbox::db;

inline db::claim_request claim_req(const std::string& owner, int limit, std::chrono::seconds lease = 30s) {
  db::claim_request r;
  r.owner = owner;
  r.token = outbox::random_uuid();
  r.lease = lease;
  r.limit = limit;
  return r;
}

inline db::settlement outcome_for(const db::claimed_row& row, db::settle_state state) {
  db::settlement s;
  s.id = row.id;
  s.lease_token = row.lease_token;
  s.state = state;
  s.attempt = row.attempts;
  s.outcome = state == db::settle_state::sent ? "delivered" : "retry";
  s.http_status = state == db::settle_state::sent ? 200 : 503;
  return s;
}

// Runs one call on a fresh session of `h`'s store.
template <class H, class Call>
auto on_session(H& h, Call call) {
  return outbox::test::run_on(h.io(), [&](auto) -> decltype(call(std::declval<db::store_session&>())) {
    auto session = h.store().open_session("conformance");
    const auto opened = co_await session->async_connect();
    REQUIRE(opened.has_value());
    co_return co_await call(*session);
  });
}

template <class H>
db::claim_batch claim(H& h, const db::claim_request& req) {
  auto r = on_session(h, [&](db::store_session& s) { return s.async_claim_batch(req); });
  REQUIRE(r.has_value());
  return std::move(*r);
}

template <class H>
db::settle_report settle(H& h, std::vector<db::settlement> batch) {
  auto r = on_session(h, [&](db::store_session& s) { return s.async_settle("conformance", batch); });
  REQUIRE(r.has_value());
  return std::move(*r);
}

TEST_CASE_TEMPLATE_DEFINE("store: enqueue is idempotent and the key is fixed at insert", H, enqueue_id) {
  H h;
  const auto first = h.enqueue(42, "webhook", "Lead", R"({"b": 1, "a": "x"})");
  REQUIRE(first.has_value());
  CHECK_FALSE(h.enqueue(42, "webhook", "Lead", R"({"other": true})").has_value());
  CHECK(h.enqueue(42, "webhook", "Purchase").has_value());
  CHECK(h.idempotency_key(*first) == "9cdc39fe-de8d-854a-9e1d-74fafdb2a201");  // outbox_idempotency_key(42, ...)
  const auto batch = claim(h, claim_req("a", 10));
  REQUIRE(batch.rows.size() == 2);
  CHECK(nlohmann::json::parse(batch.rows[0].payload) ==
        nlohmann::json{{"a", "x"}, {"b", 1}});  // the first payload kept
}

TEST_CASE_TEMPLATE_DEFINE("store: a claim takes due rows once, under a lease, in schedule order", H, claim_id) {
  H h;
  for (int lead = 1; lead <= 3; ++lead) REQUIRE(h.enqueue(lead, "webhook", "Lead").has_value());
  const auto a = claim(h, claim_req("dispatcher-a", 2));
  REQUIRE(a.rows.size() == 2);
  CHECK_FALSE(a.next_due.has_value());  // full: no next-due answer
  for (const auto& row : a.rows) {
    CHECK(row.attempts == 1);
    CHECK_FALSE(row.reclaimed);
    const auto stored = h.read(row.id);
    CHECK(stored.state == "sending");
    CHECK(stored.lease_owner == "dispatcher-a");
  }
  const auto b = claim(h, claim_req("dispatcher-b", 10));
  REQUIRE(b.rows.size() == 1);
  CHECK(b.rows[0].id != a.rows[0].id);
  CHECK(b.rows[0].id != a.rows[1].id);
  const auto none = claim(h, claim_req("dispatcher-c", 10));
  CHECK(none.rows.empty());
  REQUIRE(none.next_due.has_value());
  REQUIRE(none.next_due->has_value());
  CHECK(**none.next_due > 25s);  // the earliest lease expiry, 30 s on
  CHECK(**none.next_due <= 30s);
}

TEST_CASE_TEMPLATE_DEFINE("store: a settle is fenced by the lease token, and a resent settle is recognised", H,
                          fence_id) {
  H h;
  const auto id = h.enqueue(1, "webhook", "Lead");
  const auto row = claim(h, claim_req("a", 1)).rows.at(0);
  auto stale = outcome_for(row, db::settle_state::sent);
  stale.lease_token = outbox::random_uuid();
  const auto lost = settle(h, {stale});
  CHECK(lost.applied.empty());
  CHECK(lost.already_applied.empty());
  CHECK(h.read(*id).state == "sending");
  CHECK(h.attempts_logged(*id, "lease_lost") == 1);
  const auto done = settle(h, {outcome_for(row, db::settle_state::sent)});
  CHECK(done.applied == std::vector<std::int64_t>{*id});
  const auto stored = h.read(*id);
  CHECK(stored.state == "sent");
  CHECK(stored.last_http_status == 200);
  CHECK(stored.lease_owner.empty());
  const auto again = settle(h, {outcome_for(row, db::settle_state::sent)});
  CHECK(again.applied.empty());
  CHECK(again.already_applied == std::vector<std::int64_t>{*id});
  CHECK(h.attempts_logged(*id, "delivered") == 1);  // the resend logged nothing
}

TEST_CASE_TEMPLATE_DEFINE("store: a retry waits out its delay; a refunded attempt is not counted", H, retry_id) {
  H h;
  const auto id = h.enqueue(1, "webhook", "Lead");
  auto row = claim(h, claim_req("a", 1)).rows.at(0);
  auto later = outcome_for(row, db::settle_state::pending);
  later.retry_delay = 60s;
  later.refund_attempt = true;
  REQUIRE(settle(h, {later}).applied.size() == 1);
  auto stored = h.read(*id);
  CHECK(stored.state == "pending");
  CHECK(stored.attempts == 0);
  CHECK_FALSE(stored.due);
  const auto early = claim(h, claim_req("a", 1));
  CHECK(early.rows.empty());
  REQUIRE(early.next_due.has_value());
  REQUIRE(early.next_due->has_value());
  CHECK(**early.next_due > 55s);
  h.pass(61s);
  row = claim(h, claim_req("a", 1)).rows.at(0);
  CHECK(row.id == *id);
  CHECK(row.attempts == 1);
}

TEST_CASE_TEMPLATE_DEFINE("store: an expired lease is claimed again, and the old holder's settle is refused", H,
                          expiry_id) {
  H h;
  const auto id = h.enqueue(1, "webhook", "Lead");
  const auto first = claim(h, claim_req("a", 1, 30s)).rows.at(0);
  CHECK(claim(h, claim_req("b", 1)).rows.empty());
  h.pass(31s);
  const auto second = claim(h, claim_req("b", 1)).rows.at(0);
  CHECK(second.id == *id);
  CHECK(second.reclaimed);
  CHECK(second.attempts == 2);
  CHECK(h.read(*id).lease_owner == "b");
  CHECK(settle(h, {outcome_for(first, db::settle_state::sent)}).applied.empty());
  CHECK(settle(h, {outcome_for(second, db::settle_state::sent)}).applied.size() == 1);
}

TEST_CASE_TEMPLATE_DEFINE("store: renewal extends only the leases whose token matches", H, renew_id) {
  H h;
  REQUIRE(h.enqueue(1, "webhook", "Lead").has_value());
  REQUIRE(h.enqueue(2, "webhook", "Lead").has_value());
  const auto rows = claim(h, claim_req("a", 2, 30s)).rows;
  REQUIRE(rows.size() == 2);
  h.pass(20s);
  const std::vector<std::int64_t> ids{rows[0].id, rows[1].id};
  const std::vector<std::string> tokens{rows[0].lease_token, outbox::random_uuid()};
  const auto renewed = on_session(h, [&](db::store_session& s) { return s.async_renew(ids, tokens, 30s); });
  REQUIRE(renewed.has_value());
  CHECK(*renewed == 1);
  h.pass(15s);  // 35 s after the claim: only the renewed lease holds
  const auto taken = claim(h, claim_req("b", 10)).rows;
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].id == rows[1].id);
}

TEST_CASE_TEMPLATE_DEFINE("store: rows of a claim whose answer was lost are released at once", H, orphans_id) {
  H h;
  const auto id = h.enqueue(1, "webhook", "Lead");
  const auto row = claim(h, claim_req("a", 1)).rows.at(0);
  const std::vector<std::string> held{row.lease_token};
  auto kept = on_session(h, [&](db::store_session& s) { return s.async_release_orphans("a", held); });
  REQUIRE(kept.has_value());
  CHECK(kept->empty());
  auto other = on_session(h, [&](db::store_session& s) { return s.async_release_orphans("b", {}); });
  REQUIRE(other.has_value());
  CHECK(other->empty());  // another owner's rows are not ours to release
  auto released = on_session(h, [&](db::store_session& s) { return s.async_release_orphans("a", {}); });
  REQUIRE(released.has_value());
  CHECK(*released == std::vector<std::int64_t>{*id});
  const auto stored = h.read(*id);
  CHECK(stored.state == "pending");
  CHECK(stored.attempts == 0);
  CHECK(stored.due);
}

TEST_CASE_TEMPLATE_DEFINE("store: skipped destinations are left alone; a probe claims one destination", H, skip_id) {
  H h;
  const auto a = h.enqueue(1, "webhook", "Lead", "{}", "a");
  const auto b = h.enqueue(2, "webhook", "Lead", "{}", "b");
  auto req = claim_req("x", 10);
  req.skip_destinations = {"webhook/a"};
  const auto batch = claim(h, req);
  REQUIRE(batch.rows.size() == 1);
  CHECK(batch.rows[0].id == *b);
  REQUIRE(batch.next_due.has_value());
  CHECK_FALSE(batch.next_due->has_value());  // nothing else waits: the skipped row says nothing, b was just claimed
  auto probe = claim_req("x", 1);
  probe.only_destination = "webhook/a";
  const auto probed = claim(h, probe);
  REQUIRE(probed.rows.size() == 1);
  CHECK(probed.rows[0].id == *a);
}

TEST_CASE_TEMPLATE_DEFINE("store: the sweep resets expired leases by each destination's policy", H, sweep_id) {
  H h;
  const auto plain = h.enqueue(1, "webhook", "Lead");
  const auto held = h.enqueue(2, "meta", "Lead");
  const auto spent = h.enqueue(3, "tiktok", "Lead");
  const std::vector<db::destination_policy> policies{{"tiktok", "default", false, 1}};
  REQUIRE(on_session(h, [&](db::store_session& s) { return s.async_record_policies("x", policies); }).has_value());
  REQUIRE(claim(h, claim_req("gone", 10, 30s)).rows.size() == 3);
  db::sweep_request req;
  req.hold_destinations = {"meta/default"};
  CHECK(on_session(h, [&](db::store_session& s) { return s.async_sweep(req); })->empty());  // not expired yet
  h.pass(40s);
  req.dry_run = true;
  const auto listed = on_session(h, [&](db::store_session& s) { return s.async_sweep(req); });
  REQUIRE(listed->size() == 3);
  CHECK(h.read(*plain).state == "sending");
  req.dry_run = false;
  const auto swept = on_session(h, [&](db::store_session& s) { return s.async_sweep(req); });
  REQUIRE(swept->size() == 3);
  CHECK(h.read(*plain).state == "pending");
  CHECK(h.read(*held).state == "held");
  CHECK(h.read(*spent).state == "dead");
  CHECK(h.read(*spent).last_error.find("no attempts are left") != std::string::npos);
  CHECK(h.attempts_logged(*plain, "lease_expired") == 1);
  for (const auto& r : *swept) CHECK(r.policy_known == (r.provider == "tiktok"));
}

TEST_CASE_TEMPLATE_DEFINE("store: an expired lease with no attempts left waits for the sweeper", H, spent_id) {
  H h;
  const auto id = h.enqueue(1, "webhook", "Lead");
  auto req = claim_req("a", 1, 30s);
  req.max_attempts = 1;
  REQUIRE(claim(h, req).rows.size() == 1);
  h.pass(31s);
  req.owner = "b";
  CHECK(claim(h, req).rows.empty());
  CHECK(h.read(*id).state == "sending");
}

TEST_CASE_TEMPLATE_DEFINE("store: on-call pauses and the queue gauges", H, pauses_id) {
  H h;
  REQUIRE(h.enqueue(1, "webhook", "Lead").has_value());
  REQUIRE(h.enqueue(2, "webhook", "Lead", "{}", "b").has_value());
  h.pause("webhook", "b");
  const auto pauses = on_session(h, [&](db::store_session& s) { return s.async_list_pauses(); });
  REQUIRE(pauses->size() == 1);
  CHECK(pauses->at(0).destination == "b");
  h.pass(10s);
  const auto gauges = on_session(h, [&](db::store_session& s) { return s.async_queue_gauges({}); });
  REQUIRE(gauges.has_value());
  CHECK(gauges->rows_by_state.at("pending") == 2);
  CHECK(gauges->oldest_due_seconds >= 9.0);  // the paused destination's row is left out of the age, not the count
  const auto lag = on_session(h, [&](db::store_session& s) { return s.async_delivery_lag(); });
  REQUIRE(lag->size() == 2);
}

}  // namespace store_conformance

// Runs every case above against harness H.
#define OUTBOX_STORE_CONFORMANCE(H)                            \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::enqueue_id, H); \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::claim_id, H);   \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::fence_id, H);   \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::retry_id, H);   \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::expiry_id, H);  \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::renew_id, H);   \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::orphans_id, H); \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::skip_id, H);    \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::sweep_id, H);   \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::spent_id, H);   \
  TEST_CASE_TEMPLATE_INVOKE(store_conformance::pauses_id, H)

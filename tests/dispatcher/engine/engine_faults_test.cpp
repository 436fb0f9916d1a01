// The engine through database and provider faults, in virtual time: lost
// answers, refusals, outages, slow requests, shutdown. The store's scripted
// faults (memory_store.hpp) stand for what engine_faults_pgtest.cpp and the e2e
// chaos runs do to a real server; those keep what only a real one can show.
#include <doctest/doctest.h>

#include "tests/support/engine_rig.hpp"

namespace engine_faults_test {

using namespace std::chrono_literals;
using outbox::db::error;
using outbox::db::error_kind;
using outbox::test::engine_rig;
using outbox::test::memory_fault;
using outbox::test::scripted_answer;

namespace {

bool logged(const engine_rig& rig, const std::string& line) { return rig.logs().find(line) != std::string::npos; }

}  // namespace

TEST_CASE("engine faults: a claim whose answer was lost is released at once after the reconnect, not a lease later") {
  engine_rig rig;
  rig.start();
  REQUIRE(rig.run_until_state(rig.enqueue(1), "sent"));  // a claim went out: from now on one may be lost
  rig.store.fail_next(memory_fault{"claim", error(error_kind::connection, "server closed the connection"), true});
  const auto lost = rig.enqueue(2);
  REQUIRE(rig.run_until([&] { return rig.store.calls("release_orphans") >= 1; }));
  const auto released_at = rig.clock.steady_now();
  REQUIRE(rig.run_until_state(lost, "sent"));
  CHECK(rig.clock.steady_now() - released_at < 5s);  // the lease is 17 s
  CHECK(logged(rig, "released rows of claims whose answer was lost"));
  CHECK(rig.row(lost).attempts == 1);  // the lost claim's attempt was given back
  CHECK(rig.http.sent.size() == 2);
}

TEST_CASE("engine faults: a settle whose answer was lost is sent again and recorded once") {
  engine_rig rig;
  rig.store.fail_next(memory_fault{"settle", error(error_kind::connection, "server closed the connection"), true});
  rig.start();
  const auto id = rig.enqueue(1);
  REQUIRE(rig.run_until_state(id, "sent"));
  REQUIRE(rig.run_until([&] { return rig.store.calls("settle") >= 2; }));
  CHECK(logged(rig, "outcome already recorded by a settle whose answer was lost"));
  CHECK(rig.store.attempts(id).size() == 1);
  CHECK(rig.http.sent.size() == 1);
  CHECK_FALSE(logged(rig, "lease lost"));
}

TEST_CASE("engine faults: a settle refused by a read-only database keeps the outcome and records it once") {
  engine_rig rig;
  for (int i = 0; i < 3; ++i) {
    rig.store.fail_next(memory_fault{
        "settle", error(error_kind::sql, "cannot execute UPDATE in a read-only transaction", "25006"), false});
  }
  rig.start();
  const auto id = rig.enqueue(1);
  REQUIRE(rig.run_until_state(id, "sent"));
  CHECK(rig.store.calls("settle") == 4);  // three refusals, 250 ms, 500 ms and 1 s apart, then the record
  CHECK(logged(rig, "settle refused by the database, not for a row's data"));
  CHECK(rig.store.attempts(id).size() == 1);
  CHECK(rig.http.sent.size() == 1);
}

TEST_CASE("engine faults: a database outage longer than the lease loses nothing and sends nothing twice") {
  engine_rig rig;
  rig.http.fallback = scripted_answer::reply(200).delayed(500ms);
  rig.start();
  std::vector<std::int64_t> ids;
  for (int lead = 1; lead <= 5; ++lead) ids.push_back(rig.enqueue(lead));
  REQUIRE(rig.run_until([&] { return rig.http.sent.size() == 5; }));
  // The requests are out; the database goes away for a minute.
  rig.store.refuse_connects = true;
  rig.store.break_connections();
  (void)rig.run_until([] { return false; }, 60s);
  CHECK(rig.store.count("sent") == 0);
  rig.store.refuse_connects = false;
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 5; }));
  CHECK(rig.http.sent.size() == 5);  // the outcomes were kept, not resent
  CHECK(logged(rig, "database connection failed; retrying"));
}

TEST_CASE("engine faults: a request slower than the lease keeps its lease by renewal") {
  engine_rig rig;
  rig.http.fallback = scripted_answer::reply(200).delayed(45s);  // the lease is 17 s
  rig.start();
  const auto id = rig.enqueue(1);
  REQUIRE(rig.run_until_state(id, "sent"));
  CHECK(rig.http.sent.size() == 1);
  CHECK(rig.store.calls("renew") >= 3);  // every lease / 3
  CHECK(rig.store.attempts(id).size() == 1);
  CHECK(rig.metrics().lease_expiries == 0);
  CHECK(rig.metrics().reclaimed == 0);
}

TEST_CASE("engine faults: a row re-claimed while its request runs settles once, under the new lease") {
  engine_rig rig([](auto& env) { env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "3600"; });
  rig.http.script = {scripted_answer::reply(200).delayed(30s)};
  rig.start();
  const auto id = rig.enqueue(1);
  REQUIRE(rig.run_until([&] { return rig.http.sent.size() == 1; }));
  // Renewals fail (as in an outage of the maintenance connection) until the lease is over.
  for (int i = 0; i < 30; ++i) rig.store.fail_next(memory_fault{"renew", error(error_kind::timeout, "timeout"), false});
  REQUIRE(rig.run_until_state(id, "sent"));
  CHECK(rig.http.sent.size() == 1);
  CHECK(logged(rig, "re-claimed a row this process still has in flight"));
  CHECK_FALSE(logged(rig, "lease lost"));
  for (const auto& a : rig.store.attempts(id)) CHECK(a.outcome != "lease_lost");
}

TEST_CASE("engine faults: shutdown gives a running request its grace, then puts the row back for a resend") {
  engine_rig rig;
  rig.http.fallback = scripted_answer::reply(200).delayed(60s);  // longer than the 5 s grace
  rig.start();
  const auto id = rig.enqueue(1);
  REQUIRE(rig.run_until([&] { return rig.http.sent.size() == 1; }));
  const auto asked = rig.clock.steady_now();
  rig.stop();
  CHECK_FALSE(rig.running());
  CHECK(rig.clock.steady_now() - asked >= 5s);
  CHECK(rig.clock.steady_now() - asked < 15s);
  CHECK(rig.row(id).state == "pending");
  const auto log = rig.store.attempts(id);
  REQUIRE(log.size() == 1);
  CHECK(log[0].outcome == "abandoned");
}

}  // namespace engine_faults_test

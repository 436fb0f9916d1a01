// The engine's delivery decisions in virtual time (tests/support/engine_rig.hpp):
// retries and their timing, permanent failures, the attempt budget. Moved here
// from engine_pgtest.cpp, where each waited on the wall clock and a database.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/support/engine_rig.hpp"

namespace engine_delivery_test {

using namespace std::chrono_literals;
using outbox::test::engine_rig;
using outbox::test::scripted_answer;

TEST_CASE("engine: a row is delivered once, with its idempotency key as the webhook id") {
  engine_rig rig;
  rig.start();
  const auto id = rig.enqueue(1, "Lead", R"({"value": 10})");
  REQUIRE(rig.run_until_state(id, "sent"));
  REQUIRE(rig.http.sent.size() == 1);
  CHECK(rig.http.sent[0].request.url == "https://hooks.test/hook");
  const auto& headers = rig.http.sent[0].request.headers;
  const auto webhook_id =
      std::find_if(headers.begin(), headers.end(), [](const auto& h) { return h.first == "webhook-id"; });
  REQUIRE(webhook_id != headers.end());
  CHECK(webhook_id->second == rig.row(id).idempotency_key);
  CHECK(rig.row(id).attempts == 1);
  CHECK(rig.row(id).last_http_status == 200);
  rig.stop();
  CHECK(rig.http.sent.size() == 1);
}

TEST_CASE("engine: a 503 is retried after the backoff with the same key and body, then delivered") {
  engine_rig rig;
  rig.http.script = {scripted_answer::reply(503, R"({"error":"busy"})"), scripted_answer::reply(200)};
  rig.start();
  const auto id = rig.enqueue(3, "Lead", R"({"value": 10, "currency": "EUR"})");
  REQUIRE(rig.run_until_state(id, "sent"));
  const auto& sent = rig.http.sent;
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].request.body == sent[1].request.body);
  // OUTBOX_BACKOFF_BASE_SECONDS=1 with 20 % jitter: the first retry 0.8 - 1.2 s later.
  CHECK(sent[1].at - sent[0].at >= 800ms);
  CHECK(sent[1].at - sent[0].at <= 1300ms);
  CHECK(rig.row(id).attempts == 2);
  const auto log = rig.store.attempts(id);
  REQUIRE(log.size() == 2);
  CHECK(log[0].outcome == "retry");
  CHECK(log[0].http_status == 503);
  CHECK(log[1].outcome == "delivered");
}

TEST_CASE("engine: a 429's Retry-After is honoured over the shorter backoff") {
  engine_rig rig;
  rig.http.script = {scripted_answer::reply(429, "{}", {{"retry-after", "3"}}), scripted_answer::reply(200)};
  rig.start();
  const auto id = rig.enqueue(4);
  REQUIRE(rig.run_until_state(id, "sent"));
  REQUIRE(rig.http.sent.size() == 2);
  CHECK(rig.http.sent[1].at - rig.http.sent[0].at >= 3s);
  CHECK(rig.http.sent[1].at - rig.http.sent[0].at < 4s);
}

TEST_CASE("engine: a timeout is retried; the attempts log says so") {
  engine_rig rig;
  rig.http.script = {scripted_answer::fail(outbox::providers::transport_error::timeout).delayed(2s),
                     scripted_answer::reply(200)};
  rig.start();
  const auto id = rig.enqueue(5);
  REQUIRE(rig.run_until_state(id, "sent"));
  const auto log = rig.store.attempts(id);
  REQUIRE(log.size() == 2);
  CHECK(log[0].outcome == "retry");
  CHECK(log[0].error.find("timeout") != std::string::npos);
}

TEST_CASE("engine: a 4xx is permanent: dead at once with the reason") {
  engine_rig rig;
  rig.http.fallback = scripted_answer::reply(422, R"({"error":"value must be positive"})");
  rig.start();
  const auto id = rig.enqueue(7);
  REQUIRE(rig.run_until_state(id, "dead"));
  CHECK(rig.http.sent.size() == 1);
  CHECK(rig.row(id).last_error.find("422") != std::string::npos);
  CHECK(rig.row(id).last_error.find("value must be positive") != std::string::npos);
  CHECK(rig.row(id).last_http_status == 422);
  // Nothing more is sent however long the engine runs.
  (void)rig.run_until([] { return false; }, 60s);
  CHECK(rig.http.sent.size() == 1);
}

TEST_CASE("engine: exhausting the attempts makes the row dead and says so") {
  engine_rig rig([](auto& env) { env["OUTBOX_MAX_ATTEMPTS"] = "3"; });
  rig.http.fallback = scripted_answer::reply(500);
  rig.start();
  const auto id = rig.enqueue(8);
  REQUIRE(rig.run_until_state(id, "dead"));
  CHECK(rig.http.sent.size() == 3);
  CHECK(rig.row(id).attempts == 3);
  CHECK(rig.row(id).last_error.find("gave up") != std::string::npos);
  // Backoff doubles: about 1 s, then about 2 s (20 % jitter).
  const auto& sent = rig.http.sent;
  CHECK(sent[2].at - sent[1].at > sent[1].at - sent[0].at);
}

TEST_CASE("engine: malformed payloads go dead before any request; the engine keeps going") {
  engine_rig rig;
  rig.start();
  const auto bad = rig.enqueue(9, "Lead", R"("just a string")");
  const auto good = rig.enqueue(10);
  REQUIRE(rig.run_until([&] { return rig.row(bad).state == "dead" && rig.row(good).state == "sent"; }));
  CHECK(rig.http.sent.size() == 1);
  CHECK_FALSE(rig.row(bad).last_error.empty());
}

TEST_CASE("engine: no retry is scheduled past the retry horizon; the row dies saying so") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_RETRY_HORIZON_HOURS"] = "1";
    // 15, 30, 60 min, each +-20 % jitter: the second retry falls by 54 min at the
    // latest, the third at 84 min at the earliest (600 s let all three fit once in a while).
    env["OUTBOX_BACKOFF_BASE_SECONDS"] = "900";
    env["OUTBOX_MAX_ATTEMPTS"] = "12";
  });
  rig.http.fallback = scripted_answer::reply(503);
  rig.start();
  const auto id = rig.enqueue(11);
  const auto created = rig.clock.steady_now();
  REQUIRE(rig.run_until_state(id, "dead", std::chrono::seconds(std::chrono::hours(2))));
  CHECK(rig.http.sent.size() == 3);
  CHECK(rig.http.sent.back().at - created < 1h);
  CHECK(rig.row(id).last_error.find("retry horizon") != std::string::npos);
}

TEST_CASE(
    "engine: with the defaults, every retry of a failing row stays inside Meta's and TikTok's 48 h dedup window") {
  engine_rig rig([](auto& env) { env.erase("OUTBOX_BACKOFF_BASE_SECONDS"); });
  rig.http.fallback = scripted_answer::reply(500);
  rig.start();
  const auto id = rig.enqueue(12);
  const auto created = rig.clock.steady_now();
  REQUIRE(rig.run_until_state(id, "dead", std::chrono::seconds(std::chrono::hours(72))));
  CHECK(rig.http.sent.size() == 12);  // the attempt budget ran out first
  CHECK(rig.http.sent.back().at - created < 36h);
}

}  // namespace engine_delivery_test

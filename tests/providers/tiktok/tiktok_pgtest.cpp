// The engine against a real PostgreSQL and a local HTTPS server speaking TikTok's
// Events API 2.0 (tests/support/fake_tiktok): delivery, HTTP 200 answers that
// carry an error code (permanent, transient, token), and batch splitting.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>

#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_tiktok.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace tiktok_pgtest {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::engine_harness;
using outbox::test::fake_tiktok;
using outbox::test::response_plan;

namespace {

std::string server_base(const outbox::environment& env) {
  const std::string url = env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  return url.substr(0, url.rfind('/'));
}

std::function<void(outbox::environment&)> tiktok_env(std::map<std::string, std::string> overrides = {}) {
  return [overrides = std::move(overrides)](outbox::environment& env) {
    const std::string prefix = "OUTBOX_DEST__TIKTOK__DEFAULT__";
    env[prefix + "ACCESS_TOKEN"] = "tiktok-good-token";
    env[prefix + "EVENT_SOURCE_ID"] = "CRMEVENTSET1";
    env[prefix + "BASE_URL"] = server_base(env);
    for (const auto& [key, value] : overrides) env[prefix + key] = value;
  };
}

// Within TikTok's acceptance window: a minute ago.
const std::int64_t recent =
    std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() - 60;

std::string payload(const std::string& order_id) {
  return json{{"event_time", recent},       {"email", " ALICE_abc@gmail.com "},
              {"phone", "+1 213 373 4253"}, {"external_id", "user_123"},
              {"ttclid", "E.C.P.click"},    {"value", "25.00"},
              {"currency", "usd"},          {"order_id", order_id},
              {"lead_id", "7000000000001"}}
      .dump();
}

std::string tiktok_answer(long long code, const std::string& message) {
  return json{{"code", code}, {"message", message}, {"request_id", "scripted"}, {"data", json::object()}}.dump();
}

}  // namespace

TEST_CASE("tiktok: events are delivered with hashed user data, Access-Token header and test_event_code") {
  engine_harness h(tiktok_env({{"TEST_EVENT_CODE", "TEST42"}}));
  const fake_tiktok tiktok;
  tiktok.install(h.server);
  const auto a = h.enqueue(601, "SubmitForm", payload("order-601"), "tiktok");
  const auto b = h.enqueue(602, "SubmitForm", payload("order-602"), "tiktok");
  h.start();
  REQUIRE(h.wait_state(a, "sent"));
  REQUIRE(h.wait_state(b, "sent"));
  const auto requests = tiktok.requests();
  REQUIRE(requests.size() == 1);  // one batch
  CHECK(requests[0].code == 0);
  CHECK(requests[0].event_source == "crm");
  CHECK(requests[0].test_event_code == "TEST42");
  const auto raw = h.server.requests().front();
  CHECK(raw.target == "/open_api/v1.3/event/track/");
  CHECK(raw.header("access-token") == "tiktok-good-token");
  CHECK_FALSE(raw.header("authorization").has_value());

  CHECK(tiktok.times_accepted(h.column_of(a, "idempotency_key")) == 1);
  CHECK(tiktok.times_accepted(h.column_of(b, "idempotency_key")) == 1);
  const auto e = tiktok.accepted_events().front();
  CHECK(e["event"] == "SubmitForm");
  CHECK(e["event_time"] == recent);
  // The hash vectors of design/providers.md, reached from raw CRM values.
  CHECK(e["user"]["email"] == "848a771458438fc2ec420560d769fb9b9b86851ee338ec56517baabd79d3bb4f");
  CHECK(e["user"]["phone"] == "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
  CHECK(e["user"]["external_id"] == "80fba0ae1c48e3978e43e4efc365e14e12ea0c830ba8ba5b9a2dafc7e3f2ab8b");
  CHECK(e["user"]["ttclid"] == "E.C.P.click");
  CHECK(e["properties"] == json{{"currency", "USD"}, {"value", 25.0}, {"order_id", "order-601"}});
  CHECK(e["lead"] == json{{"lead_id", "7000000000001"}, {"lead_event_source", "outbox-dispatcher"}});
  h.stop();
}

TEST_CASE("tiktok: HTTP 200 with an error code splits the batch; the bad event is dead with TikTok's message") {
  engine_harness h(tiktok_env());
  const fake_tiktok tiktok;
  tiktok.install(h.server);
  const auto good = h.enqueue(701, "SubmitForm", payload("order-701"), "tiktok");
  const auto bad = h.enqueue(702, "SubmitForm", payload("poison"), "tiktok");
  h.start();
  REQUIRE(h.wait_state(good, "sent"));
  REQUIRE(h.wait_state(bad, "dead"));
  const auto requests = tiktok.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].event_ids.size() == 2);
  CHECK(requests[0].code == 40002);
  CHECK(tiktok.times_accepted(h.column_of(good, "idempotency_key")) == 1);
  CHECK(tiktok.times_accepted(h.column_of(bad, "idempotency_key")) == 0);
  CHECK(h.column_of(bad, "last_error") ==
        "TikTok code 40002: Invalid parameter: data[0].properties.order_id 'poison'. [request_id fake-40002]");
  CHECK(h.column_of(bad, "last_http_status") == "200");
  CHECK(h.attempts_of(bad) == 1);
  CHECK(h.attempts_of(good) == 1);
  h.stop();
}

TEST_CASE("tiktok: HTTP 200 with code 50002 is retried, then delivered") {
  engine_harness h(tiktok_env());
  const fake_tiktok tiktok;
  tiktok.install(h.server);
  h.server.script({response_plan::reply(200, tiktok_answer(50002, "System error, please retry later."))});
  h.start();
  const auto id = h.enqueue(801, "SubmitForm", payload("order-801"), "tiktok");
  REQUIRE(h.wait_state(id, "sent", 20s));
  CHECK(h.attempts_of(id) == 2);
  CHECK(tiktok.times_accepted(h.column_of(id, "idempotency_key")) == 1);
  auto log =
      h.db.query("SELECT outcome, error, http_status FROM event_delivery_attempt WHERE delivery_id = $1 ORDER BY id",
                 {std::to_string(id)});
  REQUIRE(log.rows() == 2);
  CHECK(log.text(0, 0) == "retry");
  CHECK(std::string(log.text(0, 1)).starts_with("TikTok code 50002: System error"));
  CHECK(log.text(0, 2) == "200");
  CHECK(log.text(1, 0) == "delivered");
  h.stop();
}

TEST_CASE("tiktok: a revoked token (40105 with HTTP 200) pauses the destination without burning attempts") {
  engine_harness h(tiktok_env({{"ACCESS_TOKEN", "tiktok-revoked-token"}}));
  const fake_tiktok tiktok;
  tiktok.install(h.server);
  h.start();
  const auto id = h.enqueue(901, "SubmitForm", payload("order-901"), "tiktok");
  REQUIRE(h.wait_for([&] { return h.state_of(id) == "pending" && h.column_of(id, "last_error") != ""; }, 10s));
  CHECK(h.attempts_of(id) == 0);
  CHECK(h.column_of(id, "last_error").find("TikTok code 40105") != std::string::npos);
  CHECK(h.logs().find("destination paused") != std::string::npos);
  CHECK(tiktok.requests().size() == 1);
  CHECK(tiktok.accepted_events().empty());
  h.stop();
}

}  // namespace tiktok_pgtest

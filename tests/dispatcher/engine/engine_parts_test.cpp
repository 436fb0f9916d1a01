// Pure pieces of the engine: row preparation, settlement planning, rate limit,
// command-line durations, array parameters.
#include <doctest/doctest.h>

#include "db/params.hpp"
#include "dispatcher/cli/duration_arg.hpp"
#include "dispatcher/engine/event_prep.hpp"
#include "dispatcher/engine/settlement_plan.hpp"
#include "dispatcher/engine/token_bucket.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace engine_parts_test {

using namespace std::chrono_literals;
using outbox::db::claimed_row;
using outbox::providers::event_outcome;
using outbox::providers::outcome_kind;

namespace {

claimed_row row_with(std::string payload) {
  claimed_row r;
  r.id = 7;
  r.lead_project_id = 42;
  r.provider = "webhook";
  r.destination = "default";
  r.event_name = "Lead";
  r.idempotency_key = "key-1";
  r.payload = std::move(payload);
  r.attempts = 3;
  return r;
}

const outbox::row_ticket ticket{7, "token", 3, std::chrono::system_clock::now()};

}  // namespace

TEST_CASE("prepare_event accepts an object and carries the frozen identity") {
  const auto prepared = outbox::prepare_event(row_with(R"({"value": 5})"), 1024);
  const auto* event = std::get_if<outbox::providers::outbound_event>(&prepared);
  REQUIRE(event != nullptr);
  CHECK(event->row_id == 7);
  CHECK(event->idempotency_key == "key-1");
  CHECK(event->lead_project_id == 42);
  CHECK(event->attempt == 3);
  CHECK(event->payload["value"] == 5);
}

TEST_CASE("prepare_event for a provider that sends the stored text keeps it and skips the parse") {
  const auto prepared = outbox::prepare_event(row_with(R"({"value": 5})"), 1024, outbox::payload_use::text_only);
  const auto* event = std::get_if<outbox::providers::outbound_event>(&prepared);
  REQUIRE(event != nullptr);
  CHECK(event->payload_text == R"({"value": 5})");
  CHECK(event->payload.is_null());  // not parsed
  // What is not an object is still refused with the same reason.
  const auto array = outbox::prepare_event(row_with("[1]"), 1024, outbox::payload_use::text_only);
  REQUIRE(std::holds_alternative<std::string>(array));
  CHECK(std::get<std::string>(array).find("must be a JSON object, got array") != std::string::npos);
}

TEST_CASE("prepare_event rejects malformed rows with a reason") {
  auto reason = [](claimed_row r, std::size_t limit = 1024) {
    const auto prepared = outbox::prepare_event(r, limit);
    const auto* text = std::get_if<std::string>(&prepared);
    return text ? *text : std::string();
  };
  CHECK(reason(row_with("[1]")).find("must be a JSON object, got array") != std::string::npos);
  CHECK(reason(row_with("\"text\"")).find("got string") != std::string::npos);
  CHECK(reason(row_with("{not json")).find("not valid JSON") != std::string::npos);
  CHECK(reason(row_with(R"({"a": "0123456789"})"), 10).find("over the limit of 10") != std::string::npos);
  auto no_key = row_with("{}");
  no_key.idempotency_key.clear();
  CHECK(reason(no_key).find("idempotency_key") != std::string::npos);
}

TEST_CASE("plan_settlement maps each verdict to the row's next state") {
  const outbox::backoff_policy policy;
  const auto now = std::chrono::system_clock::now();
  outbox::attempt_facts facts{now, 12ms, 200, "ok"};

  auto sent = outbox::plan_settlement(ticket, event_outcome{outcome_kind::delivered, "", {}}, facts, policy, now, 0.5);
  CHECK(sent.state == outbox::db::settle_state::sent);
  CHECK(sent.outcome == "delivered");
  CHECK(sent.lease_token == "token");
  CHECK(sent.attempt == 3);
  CHECK(sent.http_status == 200);

  auto dead =
      outbox::plan_settlement(ticket, event_outcome{outcome_kind::dead, "HTTP 400: bad", {}}, facts, policy, now, 0.5);
  CHECK(dead.state == outbox::db::settle_state::dead);
  CHECK(dead.error == "HTTP 400: bad");

  auto retry =
      outbox::plan_settlement(ticket, event_outcome{outcome_kind::retry, "HTTP 503", {}}, facts, policy, now, 0.5);
  CHECK(retry.state == outbox::db::settle_state::pending);
  CHECK(retry.retry_delay == 8s);  // base 2 s * 2^(3-1), no jitter at 0.5
  CHECK_FALSE(retry.refund_attempt);

  auto hinted =
      outbox::plan_settlement(ticket, event_outcome{outcome_kind::retry, "HTTP 429", 120s}, facts, policy, now, 0.5);
  CHECK(hinted.retry_delay == 120s);
}

TEST_CASE("plan_settlement gives up when attempts are exhausted and says why") {
  outbox::backoff_policy policy;
  policy.max_attempts = 3;
  const auto now = std::chrono::system_clock::now();
  auto s = outbox::plan_settlement(ticket, event_outcome{outcome_kind::retry, "HTTP 503", {}}, {}, policy, now, 0.5);
  CHECK(s.state == outbox::db::settle_state::dead);
  CHECK(s.error.find("HTTP 503; gave up:") == 0);
}

TEST_CASE("put-backs never count the attempt; rejections are dead") {
  auto p = outbox::plan_putback(ticket, 60s, "paused", "HTTP 401", std::chrono::system_clock::time_point{});
  CHECK(p.refund_attempt);
  CHECK(p.state == outbox::db::settle_state::pending);
  CHECK(p.retry_delay == 60s);
  auto r = outbox::plan_rejection(ticket, "no destination", std::chrono::system_clock::now());
  CHECK(r.state == outbox::db::settle_state::dead);
  CHECK(r.outcome == "rejected");
  CHECK_FALSE(r.refund_attempt);
}

TEST_CASE("a destination-wide refusal is logged with the API's answer, not counted, and says destination paused") {
  const auto started = std::chrono::system_clock::now() - 1s;
  const outbox::attempt_facts facts{started, 37ms, 401, R"({"error":"bad token"})", "resent on a fresh connection"};
  const auto p = outbox::plan_paused_attempt(ticket, facts, "HTTP 401 from destination: {\"error\":\"bad token\"}");
  CHECK(p.state == outbox::db::settle_state::pending);
  CHECK(p.refund_attempt);
  CHECK(p.log_attempt);
  CHECK(p.retry_delay == 0ms);
  CHECK(p.outcome == "paused");
  CHECK(p.attempt == 3);
  CHECK(p.http_status == 401);
  CHECK(p.duration == 37ms);
  CHECK(p.started_at == started);
  CHECK(p.response_excerpt == R"({"error":"bad token"})");
  CHECK(p.note == "resent on a fresh connection");
  // The prefix the runbook's "Rows stay in pending" table shows.
  CHECK(p.error == "destination paused: HTTP 401 from destination: {\"error\":\"bad token\"}");
}

TEST_CASE("token bucket: burst first, then one token per 1/rate") {
  const auto t0 = outbox::token_bucket::clock::now();
  outbox::token_bucket bucket(10, 2, t0);
  CHECK(bucket.reserve(t0) == 0s);
  CHECK(bucket.reserve(t0) == 0s);
  CHECK(bucket.reserve(t0) == 100ms);    // third caller waits one refill
  CHECK(bucket.reserve(t0) == 200ms);    // and the next queues behind it
  CHECK(bucket.reserve(t0 + 1s) == 0s);  // refilled (capped at burst)
  outbox::token_bucket unlimited(0, 1, t0);
  for (int i = 0; i < 1000; ++i) REQUIRE(unlimited.reserve(t0) == 0s);
}

TEST_CASE("durations on the command line") {
  CHECK_FALSE(outbox::parse_duration_arg("90").has_value());  // a unit is required
  CHECK(outbox::parse_duration_arg("90s") == 90s);
  CHECK(outbox::parse_duration_arg("15m") == 900s);
  CHECK(outbox::parse_duration_arg("2h") == 7200s);
  CHECK(outbox::parse_duration_arg("1d") == 86400s);
  for (const char* bad : {"", "m", "-5", "5x", "1.5h", "abc", "99999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(outbox::parse_duration_arg(bad).has_value());
  }
}

TEST_CASE("array parameters quote text and keep NULLs") {
  const std::vector<std::int64_t> ids{1, -2, 3};
  CHECK(outbox::db::int_array(ids) == "{1,-2,3}");
  const std::vector<std::optional<std::string>> texts{std::string("a\"b"), std::nullopt, std::string("c\\d"),
                                                      std::string("")};
  CHECK(outbox::db::text_array(texts) == R"({"a\"b",NULL,"c\\d",""})");
  CHECK(outbox::db::int_array(std::vector<std::int64_t>{}) == "{}");
}

}  // namespace engine_parts_test

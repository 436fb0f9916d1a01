// The engine's findings of the fault audit, each against a real PostgreSQL and a
// real local HTTPS server: hostile text, a re-claimed own row, paused and
// broken destinations, lost claims, and shutdown of a hold destination.
#include <doctest/doctest.h>

#include <chrono>

#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace engine_faults_pgtest {

using namespace std::chrono_literals;
using outbox::test::engine_harness;
using outbox::test::response_plan;

namespace {

std::size_t requests_for(const engine_harness& h, const std::string& key) {
  std::size_t n = 0;
  for (const auto& r : h.server.requests()) n += r.header("webhook-id") == key ? 1 : 0;
  return n;
}

void add_webhook(outbox::environment& env, const std::string& name, const std::string& path) {
  const std::string url = env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  env["OUTBOX_DEST__WEBHOOK__" + name + "__URL"] = url.substr(0, url.rfind('/')) + path;
  env["OUTBOX_DEST__WEBHOOK__" + name + "__SECRET"] = env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET");
}

}  // namespace

TEST_CASE("finding 1: a provider answer with a NUL and invalid UTF-8 is recorded, and settling goes on") {
  engine_harness h;
  h.server.script({response_plan::reply(400, std::string("{\"error\":\"bad \0 input \xC3\"}", 25))});
  h.start();
  const auto bad = h.enqueue(1, "Lead");
  REQUIRE(h.wait_state(bad, "dead"));
  const auto good = h.enqueue(2, "Lead");
  CHECK(h.wait_state(good, "sent"));
  CHECK(h.column_of(bad, "last_http_status") == "400");
  CHECK(h.column_of(bad, "provider_response").find("input") != std::string::npos);
  CHECK(h.logs().find("settle failed") == std::string::npos);
  h.stop();
}

TEST_CASE("finding 6: a destination paused by on-call costs nothing: no claim, no attempt row") {
  engine_harness h([](auto& env) { add_webhook(env, "PAUSED", "/paused"); });
  h.db.query(
      "INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) "
      "VALUES ('webhook', 'paused', 'vendor outage', 'test')");
  for (int lead = 1; lead <= 100; ++lead) h.enqueue(lead, "Lead", R"({"value": 1})", "webhook", "paused");
  h.start();
  // Several claim cycles later (each row of `default` is one), nothing of `paused` was touched.
  for (int lead = 1; lead <= 3; ++lead) REQUIRE(h.wait_state(h.enqueue(1000 + lead, "Lead"), "sent"));
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'paused' AND state = 'pending' "
                    "AND attempts = 0 AND updated_at = created_at") == 100);
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery_attempt a JOIN event_delivery d ON d.id = a.delivery_id "
                    "WHERE d.destination = 'paused'") == 0);
  CHECK(h.server.request_count() == 3);
  h.stop();
}

TEST_CASE("finding 6: every destination's policy is recorded before the first claim") {
  engine_harness h([](auto& env) { add_webhook(env, "SECOND", "/second"); });
  h.server.script({response_plan::reply(200).after(1000ms)});
  const auto id = h.enqueue(1, "Lead");  // due before the engine starts: the first claim takes it
  h.start();
  REQUIRE(h.server.wait_for_requests(1, 10s));
  // While its request runs, the row's lease tells when it was claimed (lease_expires_at - OUTBOX_LEASE_SECONDS).
  const auto claimed_after_policies = h.db.scalar(
      "SELECT count(*) FROM event_delivery d, outbox_destination_policy p "
      "WHERE d.id = $1 AND d.state = 'sending' AND p.provider = 'webhook' "
      "AND p.recorded_at <= d.lease_expires_at - $2::int * interval '1 second'",
      {std::to_string(id), std::to_string(h.cfg.lease.count())});
  CHECK(claimed_after_policies == 2);  // both destinations, the one without rows too
  CHECK(h.wait_state(id, "sent"));
  h.stop();
}

TEST_CASE("finding 5: a request resent on a fresh connection is counted and noted on its attempt") {
  engine_harness h;
  // The kept-alive connection closes after reading the second request whole, without an answer.
  h.server.script({response_plan::reply(200), response_plan::close_without_response(), response_plan::reply(200)});
  h.start();
  REQUIRE(h.wait_state(h.enqueue(1, "Lead"), "sent"));
  const auto second = h.enqueue(2, "Lead");
  REQUIRE(h.wait_state(second, "sent"));
  CHECK(requests_for(h, h.column_of(second, "idempotency_key")) == 2);  // read twice by the receiver
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1 "
                    "AND note LIKE '%sent again on a fresh one%'",
                    {std::to_string(second)}) == 1);
  h.stop();
  CHECK(h.metrics_text().find("outbox_requests_resent_total{provider=\"webhook\",destination=\"default\"} 1") !=
        std::string::npos);
}

TEST_CASE(
    "a row naming a provider with capitals is told names are case-sensitive; an unknown one the variable to set") {
  engine_harness h;
  h.start();
  const auto capitals = h.enqueue(1, "Lead", R"({"value": 1})", "Webhook", "default");
  const auto unknown = h.enqueue(2, "Lead", R"({"value": 1})", "crm_hook", "eu");
  REQUIRE(h.wait_state(capitals, "dead"));
  REQUIRE(h.wait_state(unknown, "dead"));
  CHECK(h.column_of(capitals, "last_error") ==
        "no destination 'default' is configured for provider 'Webhook': provider and destination names are "
        "case-sensitive, and 'webhook/default' is configured; enqueue the row with those names");
  CHECK(h.column_of(unknown, "last_error") ==
        "no destination 'eu' is configured for provider 'crm_hook' (set OUTBOX_DEST__CRM_HOOK__EU__...)");
  CHECK(h.server.requests().empty());
  h.stop();
}

TEST_CASE("one poison row failing on a quiet destination never opens its circuit; it dies on its own budget") {
  engine_harness h([](auto& env) {
    env["OUTBOX_BACKOFF_CAP_SECONDS"] = "1";  // its retries come about a second apart
    env["OUTBOX_MAX_ATTEMPTS"] = "7";         // more failures in a row than the circuit's threshold
  });
  h.server.set_fallback([](const outbox::test::recorded_request& r) {
    return r.body.find("poison") != std::string::npos ? response_plan::reply(500, R"({"error":"cannot parse"})")
                                                      : response_plan::reply(200);
  });
  h.start();
  REQUIRE(h.wait_state(h.enqueue(1, "Lead"), "sent"));
  const auto poison = h.enqueue(2, "Lead", R"({"poison": true})");
  REQUIRE(h.wait_state(poison, "dead", 30s));
  CHECK(h.attempts_of(poison) == 7);
  CHECK(h.logs().find("destination circuit opened") == std::string::npos);
  REQUIRE(h.wait_state(h.enqueue(3, "Lead"), "sent"));  // the destination was never paused for it
  h.stop();
}

}  // namespace engine_faults_pgtest

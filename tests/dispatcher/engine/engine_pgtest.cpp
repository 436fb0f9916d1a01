// The engine in this process against a real PostgreSQL and real local HTTPS
// servers: what only they show (LISTEN wake-up, HTTP timeouts and resets, TLS
// refusal, payloads PostgreSQL stored). Retry timing, pauses and the settle
// windows are tested in virtual time (tests/dispatcher/engine/engine_delivery_test.cpp
// and its siblings).
#include <doctest/doctest.h>

#include <chrono>

#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace engine_pgtest {

using namespace std::chrono_literals;
using outbox::test::engine_harness;
using outbox::test::response_plan;

TEST_CASE("a NOTIFY wakes the engine long before the fallback poll") {
  engine_harness h([](auto& env) { env["OUTBOX_POLL_INTERVAL_MS"] = "60000"; });
  h.start();
  REQUIRE(h.wait_for([&] { return h.logs().find("listening for new rows") != std::string::npos; }, 10s));
  const auto inserted = std::chrono::steady_clock::now();
  const auto id = h.enqueue(1, "Lead");
  REQUIRE(h.server.wait_for_requests(1, 10s));
  const auto latency = h.server.requests().front().arrived_at - inserted;
  CHECK(latency < 2s);  // the poll would take 60 s
  CHECK(h.wait_state(id, "sent"));
  const auto req = h.server.requests().front();
  CHECK(req.method == "POST");
  CHECK(req.target == "/hook");
  CHECK(req.header("webhook-id") == h.column_of(id, "idempotency_key"));
  CHECK(req.header("webhook-signature").value_or("").starts_with("v1,"));
  CHECK(req.body == R"({"value": 1})");  // the row's jsonb text, byte for byte
  h.stop();
}

TEST_CASE("poll-only mode delivers without any notification") {
  engine_harness h([](auto& env) {
    env["OUTBOX_WAKE_MODE"] = "poll";
    env["OUTBOX_POLL_INTERVAL_MS"] = "200";
  });
  h.start();
  const auto id = h.enqueue(2, "Lead");
  CHECK(h.wait_state(id, "sent"));
  CHECK(h.server.request_count() == 1);
  CHECK(h.logs().find("listening for new rows") == std::string::npos);
  h.stop();
}

TEST_CASE("a request that hangs past the deadline times out and is retried") {
  engine_harness h;
  h.server.script({response_plan::hang(), response_plan::reply(200)});
  h.start();
  const auto id = h.enqueue(5, "Lead");
  REQUIRE(h.wait_state(id, "sent", 20s));
  auto first =
      h.db.query("SELECT outcome, error FROM event_delivery_attempt WHERE delivery_id = $1 ORDER BY id LIMIT 1",
                 {std::to_string(id)});
  CHECK(first.text(0, 0) == "retry");
  CHECK(std::string(first.text(0, 1)).find("timeout") != std::string::npos);
  h.stop();
}

TEST_CASE("a connection reset mid-response is retried by the engine, not replayed by the client") {
  engine_harness h;
  h.server.script({response_plan::close_mid_response(), response_plan::reply(200)});
  h.start();
  const auto id = h.enqueue(6, "Lead");
  REQUIRE(h.wait_state(id, "sent", 20s));
  CHECK(h.server.request_count() == 2);
  CHECK(h.attempts_of(id) == 2);
  h.stop();
}

TEST_CASE("malformed rows go dead at once with a clear error and the engine keeps going") {
  engine_harness h([](auto& env) {
    env["OUTBOX_MAX_PAYLOAD_BYTES"] = "1024";
    // No wait for a destination to be created (tests/dispatcher/engine/engine_registry_test.cpp has that).
    env["OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS"] = "0";
  });
  h.start();
  const auto unknown_provider = h.enqueue(9, "Lead", "{}", "nosuch");
  const auto unknown_destination = h.enqueue(10, "Lead", "{}", "webhook", "nowhere");
  const auto not_object = h.enqueue(11, "Lead", "[1, 2, 3]");
  const auto oversized = h.enqueue(12, "Lead", R"({"blob": ")" + std::string(2000, 'x') + R"("})");
  for (auto id : {unknown_provider, unknown_destination, not_object, oversized}) CHECK(h.wait_state(id, "dead"));
  CHECK(h.column_of(unknown_provider, "last_error").find("provider 'nosuch'") != std::string::npos);
  CHECK(h.column_of(unknown_destination, "last_error").find("destination 'nowhere'") != std::string::npos);
  CHECK(h.column_of(not_object, "last_error").find("must be a JSON object") != std::string::npos);
  CHECK(h.column_of(oversized, "last_error").find("over the limit") != std::string::npos);
  CHECK(h.server.request_count() == 0);

  const auto good = h.enqueue(13, "Lead");
  CHECK(h.wait_state(good, "sent"));
  CHECK(h.server.request_count() == 1);
  h.stop();
}

TEST_CASE("TLS: an untrusted certificate or a wrong host name is refused and never sent to") {
  outbox::test::test_pki other;
  outbox::test::test_server_options untrusted_opts;
  untrusted_opts.certificate = other.untrusted.issue();
  outbox::test::test_https_server untrusted(untrusted_opts);
  outbox::test::test_server_options wrong_name_opts;
  engine_harness* self = nullptr;
  std::unique_ptr<outbox::test::test_https_server> wrong_name;
  engine_harness h(
      [&](auto& env) { env["OUTBOX_DEST__WEBHOOK__UNTRUSTED__URL"] = untrusted.url("/hook", "localhost"); });
  self = &h;
  outbox::test::subject_names names;
  names.dns = {"wrong.example"};
  names.ips = {};
  wrong_name_opts.certificate = h.pki.trusted.issue(names);
  wrong_name = std::make_unique<outbox::test::test_https_server>(wrong_name_opts);
  // A destination whose certificate is from our CA but for another name.
  auto env = outbox::test::base_environment(h.db, h.server, h.pki.trusted);
  h.cfg.destinations.push_back(*h.cfg.find_destination("webhook", "default"));
  h.cfg.destinations.back().name = "wrongname";
  h.cfg.destinations.back().settings["url"] = wrong_name->url("/hook", "localhost");
  h.start();
  const auto a = h.enqueue(14, "Lead", "{}", "webhook", "untrusted");
  const auto b = h.enqueue(15, "Lead", "{}", "webhook", "wrongname");
  REQUIRE(h.wait_for([&] { return self->column_of(a, "last_error") != "" && self->column_of(b, "last_error") != ""; },
                     15s));
  CHECK(untrusted.request_count() == 0);
  CHECK(wrong_name->request_count() == 0);
  CHECK(h.column_of(a, "last_error").find("tls") != std::string::npos);
  CHECK(h.column_of(b, "last_error").find("tls") != std::string::npos);
  CHECK(h.state_of(a) != "sent");
  CHECK(h.state_of(b) != "sent");
  h.stop();
}

}  // namespace engine_pgtest

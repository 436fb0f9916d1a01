// The adaptive wake mode in virtual time: while the engine drains it marks
// itself awake and inserts skip their notification; going idle, it withdraws
// the mark and rechecks (0, 25 and 250 ms) for rows whose notification was
// skipped just before; the poll interval bounds the rest. The trigger's own
// part (skipping pg_notify) is checked on PostgreSQL in adaptive_wake_pgtest.cpp.
#include <doctest/doctest.h>

#include "tests/support/engine_rig.hpp"

namespace engine_adaptive_wake_test {

using namespace std::chrono_literals;
using outbox::engine_clock;
using outbox::test::engine_rig;

namespace {

constexpr auto poll_interval = 3000ms;

void adaptive(outbox::environment& env) {
  env["OUTBOX_WAKE_MODE"] = "listen";
  env["OUTBOX_ADAPTIVE_LINGER_MS"] = "50";
  env["OUTBOX_ADAPTIVE_WAKE_RATE"] = "40";  // 2 rows in a 50 ms window
  env["OUTBOX_POLL_INTERVAL_MS"] = std::to_string(poll_interval.count());
}

// Inserts bursts of five rows, 10 ms apart, until the engine has marked itself awake.
void drive_awake(engine_rig& rig, std::int64_t& lead) {
  REQUIRE(rig.run_until([&] {
    for (int i = 0; i < 5; ++i) rig.enqueue(lead++, "Warmup");
    (void)rig.run_until([] { return false; }, std::chrono::seconds(0));
    rig.clock.advance(10ms);
    return !rig.store.awake().empty();
  }));
}

// An engine in adaptive mode, driven until it marked itself awake; then a CRM
// transaction inserts a row (no notification: the engine is awake) and stays
// open until the engine has gone idle. Returns the row's id.
std::int64_t awake_then_idle_with_open_insert(engine_rig& rig, std::int64_t lead) {
  rig.store.wake_mode = "adaptive";
  rig.start();
  std::int64_t warmup = 1;
  drive_awake(rig, warmup);
  const auto id = rig.store.enqueue_uncommitted(lead, "webhook", "Handover");
  REQUIRE(rig.run_until([&] { return rig.store.awake().empty(); }, 5s));
  return id;
}

// When the request for row `id` left, once it has.
engine_clock::steady_time request_time(engine_rig& rig, std::int64_t id) {
  const auto key = rig.row(id).idempotency_key;
  for (const auto& s : rig.http.sent) {
    for (const auto& [name, value] : s.request.headers) {
      if (name == "webhook-id" && value == key) return s.at;
    }
  }
  FAIL("no request for row " << id);
  return {};
}

}  // namespace

TEST_CASE("engine adaptive wake: draining marks the engine awake, inserts skip the notification, idle withdraws it") {
  engine_rig rig(adaptive);
  rig.store.wake_mode = "adaptive";
  rig.start();
  std::int64_t lead = 1;
  drive_awake(rig, lead);
  const int before = rig.store.notifications();
  for (int i = 0; i < 3; ++i) rig.enqueue(lead++, "WhileAwake");
  CHECK(rig.store.notifications() == before);  // the engine is draining: no hint needed
  CHECK(rig.logs().find("marked awake") != std::string::npos);
  REQUIRE(rig.run_until([&] { return rig.store.count("pending") == 0 && rig.store.count("sending") == 0; }));
  REQUIRE(rig.run_until([&] { return rig.store.awake().empty(); }, 5s));
  CHECK(rig.store.calls("publish_asleep") >= 1);
  const auto id = rig.enqueue(lead++, "AfterIdle");
  CHECK(rig.store.notifications() == before + 1);
  REQUIRE(rig.run_until_state(id, "sent"));
}

TEST_CASE(
    "engine adaptive wake: a row committed just after the engine went idle is picked up by the hand-over recheck") {
  engine_rig rig(adaptive);
  const auto id = awake_then_idle_with_open_insert(rig, 1000);
  const int before = rig.store.notifications();
  rig.store.commit(id);
  const auto committed = rig.clock.steady_now();
  CHECK(rig.store.notifications() == before);  // really the skipped-notification path
  REQUIRE(rig.run_until_state(id, "sent"));
  CHECK(request_time(rig, id) - committed <= 300ms);  // a recheck, not the 3 s poll
}

TEST_CASE("engine adaptive wake: a row committed after the hand-over still arrives within the poll interval") {
  engine_rig rig(adaptive);
  const auto id = awake_then_idle_with_open_insert(rig, 2000);
  (void)rig.run_until([] { return false; }, std::chrono::seconds(0));
  rig.clock.advance(400ms);  // past every recheck
  rig.store.commit(id);
  const auto committed = rig.clock.steady_now();
  REQUIRE(rig.run_until_state(id, "sent"));
  const auto delay = request_time(rig, id) - committed;
  CHECK(delay > 300ms);           // no recheck was left to find it
  CHECK(delay <= poll_interval);  // the bound: one poll interval
}

TEST_CASE("engine adaptive wake: in `always` mode the engine never marks itself awake") {
  engine_rig rig(adaptive);
  rig.store.wake_mode = "always";
  rig.start();
  for (std::int64_t lead = 1; lead <= 60; ++lead) {
    rig.enqueue(lead);
    rig.clock.advance(5ms);
  }
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 60; }));
  CHECK(rig.store.calls("publish_awake") == 0);
  CHECK(rig.store.notifications() == 60);
}

}  // namespace engine_adaptive_wake_test

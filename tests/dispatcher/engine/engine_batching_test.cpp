// How the engine shares statements, in virtual time: the settle window, the
// backlog window behind a destination's slots, and one claim per event for a
// trickle. On a real database these were measured with the wall clock and
// retuned for machine load several times; here the times are exact.
#include <doctest/doctest.h>

#include <vector>

#include "tests/support/engine_rig.hpp"

namespace engine_batching_test {

using namespace std::chrono_literals;
using outbox::engine_clock;
using outbox::test::engine_rig;
using outbox::test::scripted_answer;

namespace {

// Settle statements for four rows whose answers come 150 ms apart.
int settles_for_spread_answers(const std::string& window_ms) {
  engine_rig rig([&](auto& env) { env["OUTBOX_SETTLE_WINDOW_MS"] = window_ms; });
  rig.http.script = {scripted_answer::reply(200), scripted_answer::reply(200).delayed(150ms),
                     scripted_answer::reply(200).delayed(300ms), scripted_answer::reply(200).delayed(450ms)};
  rig.start();
  for (int lead = 101; lead <= 104; ++lead) rig.enqueue(lead);
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 4; }));
  CHECK(rig.http.sent.size() == 4);
  return rig.store.calls("settle");
}

}  // namespace

TEST_CASE("engine batching: outcomes that arrive within the settle window share one settle statement") {
  CHECK(settles_for_spread_answers("1000") == 1);
  CHECK(settles_for_spread_answers("0") == 4);  // each recorded as it comes
}

TEST_CASE("engine batching: while rows wait for a destination's slot, outcomes gather after each settle") {
  for (const char* window : {"2", "0"}) {
    CAPTURE(window);
    engine_rig rig([&](auto& env) {
      env["OUTBOX_SETTLE_WINDOW_MS"] = window;
      env["OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY"] = "1";
    });
    std::vector<engine_clock::steady_time> settles;
    rig.store.on_call = [&](const std::string& op) {
      if (op == "settle") settles.push_back(rig.clock.steady_now());
    };
    rig.http.fallback = scripted_answer::reply(200).delayed(5ms);
    rig.start();
    for (int lead = 401; lead <= 440; ++lead) rig.enqueue(lead);
    REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 40; }));
    REQUIRE(settles.size() >= 2);
    const auto mean_gap = (settles.back() - settles.front()) / static_cast<int>(settles.size() - 1);
    if (std::string(window) == "2") {
      // Up to 20 ms after each settle (4 answers' worth), not one settle per answer.
      CHECK(settles.size() <= 12);
      CHECK(mean_gap >= 15ms);
    } else {
      CHECK(settles.size() >= 35);  // one per answer, or nearly
      CHECK(mean_gap <= 6ms);
    }
  }
}

TEST_CASE("engine batching: the settle window does not hold rows once no request is out") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_SETTLE_WINDOW_MS"] = "1000";
    env["OUTBOX_MAX_IN_FLIGHT"] = "1";
  });
  rig.start();
  const auto started = rig.clock.steady_now();
  for (int lead = 201; lead <= 203; ++lead) rig.enqueue(lead);
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 3; }));
  CHECK(rig.clock.steady_now() - started < 1s);  // a held window would take 3 s
  CHECK(rig.store.calls("settle") == 3);         // one settle per row
}

TEST_CASE("engine batching: a trickle of events costs one claim each") {
  // Polling out of the way: each claim comes from a notification, a settle or a retry.
  engine_rig rig([](auto& env) {
    env["OUTBOX_WAKE_MODE"] = "listen";
    env["OUTBOX_POLL_INTERVAL_MS"] = "60000";
  });
  rig.start();
  REQUIRE(rig.run_until([&] { return rig.store.calls("claim") >= 1; }));
  const int before = rig.store.calls("claim");
  constexpr int events = 6;
  for (int i = 0; i < events; ++i) {
    const auto id = rig.enqueue(300 + i);
    REQUIRE(rig.run_until_state(id, "sent"));
    (void)rig.run_until([] { return false; }, 1s);  // a gap between events
  }
  CHECK(rig.http.sent.size() == events);
  CHECK(rig.store.calls("claim") - before <= events + 1);  // a wake-up after each settle would double it
}

}  // namespace engine_batching_test

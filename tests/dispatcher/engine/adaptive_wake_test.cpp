#include "dispatcher/engine/adaptive_wake.hpp"

#include <doctest/doctest.h>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace adaptive_wake_test {

using namespace outbox;
using namespace std::chrono_literals;
using action = adaptive_wake::action;

namespace {

adaptive_wake enabled_wake() {
  adaptive_wake_options o;
  o.linger = 250ms;
  o.awake_poll = 2ms;
  o.ttl = 9000ms;
  o.handover_rechecks = {0ms, 25ms, 250ms};
  o.wake_rate = 20;  // 5 rows in a 250 ms window
  adaptive_wake w(o);
  w.set_enabled(true);
  return w;
}

const adaptive_wake::clock::time_point t0{std::chrono::hours(1)};

}  // namespace

TEST_CASE("adaptive wake: low rates keep using notifications; rows found at the wake rate go awake") {
  adaptive_wake w{adaptive_wake_options{}};  // production defaults: 500 rows/s over 250 ms
  w.set_enabled(true);
  // 200 rows/s, one row per notification-driven claim: stays asleep for good.
  for (int i = 0; i < 400; ++i) CHECK(w.after_claim(t0 + i * 5ms, 1) == action::none);
  CHECK_FALSE(w.max_idle(t0 + 2s).has_value());
  // 1,000 rows/s, five rows per claim every 5 ms: awake within one window.
  const auto busy = t0 + 3s;
  int claims = 0;
  action a = action::none;
  while (a == action::none && claims < 100) a = w.after_claim(busy + claims++ * 5ms, 5);
  CHECK(a == action::publish_awake);
  CHECK(claims <= 2 * 50);  // at most two windows of 50 claims
  CHECK_FALSE(w.awake());   // only once published
  w.published(a, busy + claims * 5ms);
  CHECK(w.awake());
  CHECK(w.max_idle(busy + claims * 5ms) == std::optional<adaptive_wake::clock::duration>(20ms));
}

TEST_CASE("adaptive wake: awake re-publishes every ttl/3 while it finds rows, and withdraws after the linger") {
  auto w = enabled_wake();
  (void)w.after_claim(t0, 3);
  REQUIRE(w.after_claim(t0 + 1ms, 3) == action::publish_awake);
  w.published(action::publish_awake, t0 + 1ms);
  CHECK(w.after_claim(t0 + 2s, 3) == action::none);
  CHECK(w.after_claim(t0 + 3001ms, 3) == action::publish_awake);  // 3 s = ttl/3 since the last publish
  w.published(action::publish_awake, t0 + 3001ms);
  CHECK(w.after_claim(t0 + 3100ms, 0) == action::none);  // empty, but within the linger window
  CHECK(w.after_claim(t0 + 3251ms, 0) == action::none);
  CHECK(w.after_claim(t0 + 3252ms, 0) == action::publish_asleep);
  CHECK(w.awake());  // still awake until the withdrawal is published
  CHECK(w.max_idle(t0 + 3252ms) == std::optional<adaptive_wake::clock::duration>(2ms));
}

TEST_CASE("adaptive wake: after withdrawing it claims at once, then at each hand-over recheck, then waits") {
  auto w = enabled_wake();
  (void)w.after_claim(t0, 3);
  w.published(w.after_claim(t0 + 1ms, 3), t0 + 1ms);
  const auto asleep = t0 + 1s;
  REQUIRE(w.after_claim(asleep, 0) == action::publish_asleep);
  w.published(action::publish_asleep, asleep);
  CHECK_FALSE(w.awake());
  using opt = std::optional<adaptive_wake::clock::duration>;
  CHECK(w.max_idle(asleep) == opt(0ms));  // claim again right away
  CHECK(w.after_claim(asleep + 1ms, 0) == action::none);
  CHECK(w.max_idle(asleep + 1ms) == opt(24ms));
  CHECK(w.after_claim(asleep + 25ms, 0) == action::none);
  CHECK(w.max_idle(asleep + 25ms) == opt(225ms));
  CHECK(w.after_claim(asleep + 250ms, 0) == action::none);
  CHECK_FALSE(w.max_idle(asleep + 250ms).has_value());  // now only notifications and the poll
}

TEST_CASE("adaptive wake: rows found during the hand-over go awake again at once") {
  auto w = enabled_wake();
  (void)w.after_claim(t0, 3);
  w.published(w.after_claim(t0 + 1ms, 3), t0 + 1ms);
  w.published(w.after_claim(t0 + 1s, 0), t0 + 1s);
  REQUIRE_FALSE(w.awake());
  CHECK(w.after_claim(t0 + 1s + 1ms, 3) == action::none);  // first find after sleeping
  CHECK(w.after_claim(t0 + 1s + 3ms, 3) == action::publish_awake);
}

TEST_CASE("adaptive wake: disabled never publishes awake, and withdraws if it was awake") {
  auto w = enabled_wake();
  w.set_enabled(false);
  CHECK(w.after_claim(t0, 3) == action::none);
  CHECK(w.after_claim(t0 + 1ms, 3) == action::none);
  CHECK_FALSE(w.max_idle(t0 + 1ms).has_value());
  w.set_enabled(true);
  CHECK(w.after_claim(t0 + 2ms, 3) == action::none);
  w.published(w.after_claim(t0 + 3ms, 3), t0 + 3ms);
  REQUIRE(w.awake());
  w.set_enabled(false);
  CHECK(w.after_claim(t0 + 4ms, 3) == action::publish_asleep);
}

}  // namespace adaptive_wake_test

#include "dispatcher/adaptive_wake.hpp"

#include <doctest/doctest.h>

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
  adaptive_wake w(o);
  w.set_enabled(true);
  return w;
}

const adaptive_wake::clock::time_point t0{std::chrono::hours(1)};

}  // namespace

TEST_CASE("adaptive wake: a lone row keeps using notifications; two within the linger window go awake") {
  auto w = enabled_wake();
  CHECK(w.after_claim(t0, true) == action::none);  // one row: notifications are cheap when rare
  CHECK_FALSE(w.max_idle(t0).has_value());
  CHECK(w.after_claim(t0 + 300ms, true) == action::none);  // the next came after the linger window
  CHECK(w.after_claim(t0 + 400ms, true) == action::publish_awake);
  CHECK_FALSE(w.awake());  // only once published
  w.published(action::publish_awake, t0 + 400ms);
  CHECK(w.awake());
  CHECK(w.max_idle(t0 + 400ms) == std::optional<adaptive_wake::clock::duration>(2ms));
}

TEST_CASE("adaptive wake: awake re-publishes every ttl/3 while it finds rows, and withdraws after the linger") {
  auto w = enabled_wake();
  (void)w.after_claim(t0, true);
  REQUIRE(w.after_claim(t0 + 1ms, true) == action::publish_awake);
  w.published(action::publish_awake, t0 + 1ms);
  CHECK(w.after_claim(t0 + 2s, true) == action::none);
  CHECK(w.after_claim(t0 + 3001ms, true) == action::publish_awake);  // 3 s = ttl/3 since the last publish
  w.published(action::publish_awake, t0 + 3001ms);
  CHECK(w.after_claim(t0 + 3100ms, false) == action::none);  // empty, but within the linger window
  CHECK(w.after_claim(t0 + 3251ms, false) == action::none);
  CHECK(w.after_claim(t0 + 3252ms, false) == action::publish_asleep);
  CHECK(w.awake());  // still awake until the withdrawal is published
  CHECK(w.max_idle(t0 + 3252ms) == std::optional<adaptive_wake::clock::duration>(2ms));
}

TEST_CASE("adaptive wake: after withdrawing it claims at once, then at each hand-over recheck, then waits") {
  auto w = enabled_wake();
  (void)w.after_claim(t0, true);
  w.published(w.after_claim(t0 + 1ms, true), t0 + 1ms);
  const auto asleep = t0 + 1s;
  REQUIRE(w.after_claim(asleep, false) == action::publish_asleep);
  w.published(action::publish_asleep, asleep);
  CHECK_FALSE(w.awake());
  using opt = std::optional<adaptive_wake::clock::duration>;
  CHECK(w.max_idle(asleep) == opt(0ms));  // claim again right away
  CHECK(w.after_claim(asleep + 1ms, false) == action::none);
  CHECK(w.max_idle(asleep + 1ms) == opt(24ms));
  CHECK(w.after_claim(asleep + 25ms, false) == action::none);
  CHECK(w.max_idle(asleep + 25ms) == opt(225ms));
  CHECK(w.after_claim(asleep + 250ms, false) == action::none);
  CHECK_FALSE(w.max_idle(asleep + 250ms).has_value());  // now only notifications and the poll
}

TEST_CASE("adaptive wake: rows found during the hand-over go awake again at once") {
  auto w = enabled_wake();
  (void)w.after_claim(t0, true);
  w.published(w.after_claim(t0 + 1ms, true), t0 + 1ms);
  w.published(w.after_claim(t0 + 1s, false), t0 + 1s);
  REQUIRE_FALSE(w.awake());
  CHECK(w.after_claim(t0 + 1s + 1ms, true) == action::none);  // first find after sleeping
  CHECK(w.after_claim(t0 + 1s + 3ms, true) == action::publish_awake);
}

TEST_CASE("adaptive wake: disabled never publishes awake, and withdraws if it was awake") {
  adaptive_wake w{adaptive_wake_options{}};
  CHECK(w.after_claim(t0, true) == action::none);
  CHECK(w.after_claim(t0 + 1ms, true) == action::none);
  CHECK_FALSE(w.max_idle(t0 + 1ms).has_value());
  w.set_enabled(true);
  CHECK(w.after_claim(t0 + 2ms, true) == action::none);
  w.published(w.after_claim(t0 + 3ms, true), t0 + 3ms);
  REQUIRE(w.awake());
  w.set_enabled(false);
  CHECK(w.after_claim(t0 + 4ms, true) == action::publish_asleep);
}

#include "dispatcher/engine/backoff.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace backoff_test {

using namespace outbox;
using namespace std::chrono_literals;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

namespace {

const system_clock::time_point created = system_clock::time_point{} + 1700000000s;
constexpr double no_jitter = 0.5;  // the middle of [0, 1) scales by exactly 1

}  // namespace

TEST_CASE("defaults") {
  const backoff_policy p;
  CHECK(p.base == 2s);
  CHECK(p.cap == 3600s);
  CHECK(p.jitter == doctest::Approx(0.2));
  CHECK(p.max_attempts == 12);
  CHECK(p.retry_horizon == 36h);
  CHECK(p.retry_horizon < 48h);  // inside Meta's and TikTok's dedup window
}

TEST_CASE("delay doubles from base and stops at cap") {
  const backoff_policy p;
  CHECK(backoff_delay(p, 1, no_jitter) == 2s);
  CHECK(backoff_delay(p, 2, no_jitter) == 4s);
  CHECK(backoff_delay(p, 3, no_jitter) == 8s);
  CHECK(backoff_delay(p, 11, no_jitter) == 2048s);
  CHECK(backoff_delay(p, 12, no_jitter) == 3600s);  // 4096 capped
  CHECK(backoff_delay(p, 40, no_jitter) == 3600s);
  // Huge attempt numbers saturate instead of overflowing.
  CHECK(backoff_delay(p, std::numeric_limits<int>::max(), no_jitter) == 3600s);
  // Attempt numbers below 1 behave like the first.
  CHECK(backoff_delay(p, 0, no_jitter) == 2s);
  CHECK(backoff_delay(p, -3, no_jitter) == 2s);
}

TEST_CASE("jitter spreads the delay by +-jitter") {
  const backoff_policy p;
  CHECK(backoff_delay(p, 3, 0.0) == milliseconds{6400});   // 8 s * 0.8
  CHECK(backoff_delay(p, 3, 0.25) == milliseconds{7200});  // 8 s * 0.9
  CHECK(backoff_delay(p, 3, 0.75) == milliseconds{8800});  // 8 s * 1.1
  const auto top = backoff_delay(p, 3, std::nextafter(1.0, 0.0));
  CHECK(top <= milliseconds{9600});
  CHECK(top >= milliseconds{9599});
  // Jitter applies after the cap, so the cap is exceeded by at most +jitter.
  CHECK(backoff_delay(p, 30, 0.0) == 2880s);
  CHECK(backoff_delay(p, 30, 0.999999) <= 4320s);
  // Different random draws give different delays (the point of jitter).
  CHECK(backoff_delay(p, 5, 0.1) != backoff_delay(p, 5, 0.9));
}

TEST_CASE("jitter can be turned off and out-of-range randoms are tamed") {
  backoff_policy p;
  p.jitter = 0;
  CHECK(backoff_delay(p, 4, 0.0) == 16s);
  CHECK(backoff_delay(p, 4, 0.99) == 16s);
  p.jitter = 0.2;
  CHECK(backoff_delay(p, 4, std::nan("")) == 16s);
  CHECK(backoff_delay(p, 4, -1.0) == backoff_delay(p, 4, 0.0));
  CHECK(backoff_delay(p, 4, 7.0) == backoff_delay(p, 4, 1.0));
  p.jitter = 5.0;  // clamped to 100 %
  CHECK(backoff_delay(p, 4, 0.0) == 0s);
}

TEST_CASE("custom base and cap") {
  backoff_policy p;
  p.base = 10s;
  p.cap = 60s;
  CHECK(backoff_delay(p, 1, no_jitter) == 10s);
  CHECK(backoff_delay(p, 3, no_jitter) == 40s);
  CHECK(backoff_delay(p, 4, no_jitter) == 60s);
}

TEST_CASE("next_attempt schedules now + delay") {
  const backoff_policy p;
  const auto now = created + 10s;
  const auto d = next_attempt(p, 1, now, created, std::nullopt, no_jitter);
  REQUIRE_FALSE(d.give_up());
  CHECK(*d.next_attempt_at == now + 2s);
  CHECK(d.give_up_reason.empty());
  // Deterministic for equal inputs.
  CHECK(next_attempt(p, 4, now, created, std::nullopt, 0.3).next_attempt_at ==
        next_attempt(p, 4, now, created, std::nullopt, 0.3).next_attempt_at);
}

TEST_CASE("next_attempt gives up when attempts are exhausted") {
  backoff_policy p;
  p.max_attempts = 3;
  CHECK_FALSE(next_attempt(p, 2, created, created, std::nullopt, no_jitter).give_up());
  const auto d = next_attempt(p, 3, created, created, std::nullopt, no_jitter);
  CHECK(d.give_up());
  CHECK(d.give_up_reason == "no attempts left (3 made, max 3)");
  CHECK(next_attempt(p, 4, created, created, std::nullopt, no_jitter).give_up());
  // Even a provider hint does not buy an extra attempt.
  CHECK(next_attempt(p, 3, created, created, seconds{1}, no_jitter).give_up());
}

TEST_CASE("next_attempt gives up past the retry horizon") {
  const backoff_policy p;  // 36 h
  // 35 h 59 m 59 s after creation, the next 2 s delay would land past 36 h.
  const auto late = created + 36h - 1s;
  const auto d = next_attempt(p, 1, late, created, std::nullopt, no_jitter);
  REQUIRE(d.give_up());
  CHECK(d.give_up_reason.find("retry horizon") != std::string::npos);
  CHECK(d.give_up_reason ==
        "the next attempt (in 2s) would fall past the retry horizon (36h after the event was created)");
  // Exactly on the horizon is still allowed.
  const auto edge = next_attempt(p, 1, created + 36h - 2s, created, std::nullopt, no_jitter);
  REQUIRE_FALSE(edge.give_up());
  CHECK(*edge.next_attempt_at == created + 36h);
  // Already past the horizon (e.g. a lease expired late): give up.
  CHECK(next_attempt(p, 1, created + 40h, created, std::nullopt, no_jitter).give_up());
}

TEST_CASE("a longer Retry-After wins, a shorter one does not") {
  const backoff_policy p;
  const auto now = created + 1min;
  const auto longer = next_attempt(p, 1, now, created, seconds{120}, no_jitter);
  REQUIRE_FALSE(longer.give_up());
  CHECK(*longer.next_attempt_at == now + 120s);

  const auto shorter = next_attempt(p, 5, now, created, seconds{3}, no_jitter);  // computed 32 s
  REQUIRE_FALSE(shorter.give_up());
  CHECK(*shorter.next_attempt_at == now + 32s);

  const auto zero = next_attempt(p, 1, now, created, seconds{0}, no_jitter);
  CHECK(*zero.next_attempt_at == now + 2s);
}

TEST_CASE("Retry-After is cut to the retry horizon") {
  const backoff_policy p;
  const auto now = created + 35h;
  const auto d = next_attempt(p, 1, now, created, seconds{24 * 3600}, no_jitter);
  REQUIRE_FALSE(d.give_up());
  CHECK(*d.next_attempt_at == created + 36h);
}

TEST_CASE("the default schedule fits well inside the horizon") {
  const backoff_policy p;
  auto now = created;
  int attempt = 1;
  while (true) {
    const auto d = next_attempt(p, attempt, now, created, std::nullopt, 0.999);  // worst-case jitter
    if (d.give_up()) {
      CHECK(d.give_up_reason.find("max 12") != std::string::npos);
      break;
    }
    now = *d.next_attempt_at;
    ++attempt;
  }
  CHECK(attempt == 12);
  CHECK(now - created < 3h);  // 12 attempts take about 1.4 h with +20 % jitter
}

}  // namespace backoff_test

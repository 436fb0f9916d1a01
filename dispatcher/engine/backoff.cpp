#include "dispatcher/engine/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace outbox {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// "36h", "90m", "45s": how the give-up reasons quote durations.
std::string short_duration(seconds s) {
  const auto n = s.count();
  if (n != 0 && n % 3600 == 0) return std::to_string(n / 3600) + "h";
  if (n != 0 && n % 60 == 0) return std::to_string(n / 60) + "m";
  return std::to_string(n) + "s";
}

}  // namespace

milliseconds backoff_delay(const backoff_policy& policy, int attempt, double random01) {
  attempt = std::max(attempt, 1);
  if (std::isnan(random01)) random01 = 0.5;  // no jitter rather than garbage
  random01 = std::clamp(random01, 0.0, 1.0);
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  const double base_ms = static_cast<double>(milliseconds{std::max(policy.base, seconds{0})}.count());
  const double cap_ms = static_cast<double>(milliseconds{std::max(policy.cap, seconds{0})}.count());
  // ldexp saturates to infinity for huge attempt numbers instead of overflowing.
  const double capped = std::min(std::ldexp(base_ms, std::min(attempt - 1, 1000)), cap_ms);
  const double factor = 1.0 + jitter * (2.0 * random01 - 1.0);
  return milliseconds{std::llround(capped * factor)};
}

retry_decision next_attempt(const backoff_policy& policy, int attempt, std::chrono::system_clock::time_point now,
                            std::chrono::system_clock::time_point created_at, std::optional<seconds> retry_after,
                            double random01) {
  retry_decision decision;
  if (attempt >= policy.max_attempts) {
    decision.give_up_reason =
        "no attempts left (" + std::to_string(attempt) + " made, max " + std::to_string(policy.max_attempts) + ")";
    return decision;
  }
  const auto deadline = created_at + policy.retry_horizon;
  const milliseconds delay = backoff_delay(policy, attempt, random01);
  auto next = now + delay;
  if (next > deadline) {
    decision.give_up_reason = "the next attempt (in " + short_duration(std::chrono::ceil<seconds>(delay)) +
                              ") would fall past the retry horizon (" + short_duration(policy.retry_horizon) +
                              " after the event was created)";
    return decision;
  }
  if (retry_after && *retry_after > delay) {
    next = std::min<std::chrono::system_clock::time_point>(now + *retry_after, deadline);
  }
  decision.next_attempt_at = next;
  return decision;
}

}  // namespace outbox

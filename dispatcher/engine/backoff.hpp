#pragma once
// When to try a failed delivery again, or when to stop. Pure: the caller passes
// the clock readings and a random number, so tests are deterministic.
#include <chrono>
#include <optional>
#include <string>

namespace outbox {

struct backoff_policy {
  std::chrono::seconds base{2};    // delay after the first failed attempt
  std::chrono::seconds cap{3600};  // largest delay before jitter
  double jitter = 0.2;             // +-20 %: spreads retries of a burst that failed together
  int max_attempts = 12;           // attempts in total, the first included
  // No attempt is scheduled later than created_at + retry_horizon. Meta and TikTok
  // deduplicate on our event id for 48 h from the first receipt, so every retry
  // must land inside that window or a late retry could double-count. 36 h leaves
  // 12 h of slack for what the horizon does not see: a request in flight when the
  // horizon ends (up to one lease), clock skew between us and the provider, and a
  // Django insert that happened some time after the event was first sent from the
  // browser pixel with the same id. Raise it only for destinations without expiry.
  std::chrono::seconds retry_horizon{std::chrono::hours{36}};
};

struct retry_decision {
  // Set: try again at this time. Empty: give up (mark the row dead) because of
  // `give_up_reason`, a phrase like "no attempts left (12 made, max 12)".
  std::optional<std::chrono::system_clock::time_point> next_attempt_at;
  std::string give_up_reason;

  [[nodiscard]] bool give_up() const { return !next_attempt_at.has_value(); }
};

// Delay after failed attempt number `attempt` (1 = first): base * 2^(attempt-1),
// capped at `cap`, then scaled by a factor in [1 - jitter, 1 + jitter) chosen by
// `random01` in [0, 1) (0.5 = no jitter). So the delay never exceeds cap * (1 + jitter).
[[nodiscard]] std::chrono::milliseconds backoff_delay(const backoff_policy& policy, int attempt, double random01);

// Decides what happens after failed attempt number `attempt`:
//  - attempts exhausted (attempt >= max_attempts) -> give up;
//  - delay = backoff_delay(); a provider hint (Retry-After) replaces it when longer,
//    but a hint never pushes the retry past created_at + retry_horizon (it is cut
//    to the horizon: a last try at the edge beats none);
//  - the computed (non-hint) retry time beyond the horizon -> give up.
[[nodiscard]] retry_decision next_attempt(const backoff_policy& policy, int attempt,
                                          std::chrono::system_clock::time_point now,
                                          std::chrono::system_clock::time_point created_at,
                                          std::optional<std::chrono::seconds> retry_after, double random01);

}  // namespace outbox

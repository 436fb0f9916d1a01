#pragma once
// From a provider's verdict on one event to the row's next state. Pure: the
// clock and the jitter draw come in as arguments.
#include <chrono>
#include <optional>
#include <string>

#include "db/delivery_store.hpp"
#include "dispatcher/engine/backoff.hpp"
#include "providers/provider.hpp"

namespace outbox {

// What the engine knows of one row in flight.
struct row_ticket {
  std::int64_t id = 0;
  std::string lease_token;
  int attempt = 0;
  std::chrono::system_clock::time_point created_at;
};

struct attempt_facts {
  std::chrono::system_clock::time_point started_at;
  std::chrono::milliseconds duration{0};
  std::optional<int> http_status;
  std::string response_excerpt;
  std::string note;  // for the attempts log (e.g. resent on a fresh connection)
  // Set when the request went twice (no answer on a reused connection, then
  // sent again on a fresh one): the first try's duration, logged as its own attempt.
  std::optional<std::chrono::milliseconds> unanswered_first_try;
};

// delivered -> sent; dead -> dead; retry -> pending after backoff, or dead when
// attempts or the retry horizon are exhausted (the error then says both why it
// failed and why we gave up).
[[nodiscard]] db::settlement plan_settlement(const row_ticket& row, const providers::event_outcome& outcome,
                                             const attempt_facts& facts, const backoff_policy& policy,
                                             std::chrono::system_clock::time_point now, double random01);

// Put back without counting the attempt: paused destination, shutdown before sending.
[[nodiscard]] db::settlement plan_putback(const row_ticket& row, std::chrono::milliseconds delay, std::string outcome,
                                          std::string reason, std::chrono::system_clock::time_point now);

// A request the destination refused as a whole (401/403, a refused token): put
// back without counting the attempt, but logged with what the API answered.
// last_error reads "destination paused: <reason>", like every paused put-back.
[[nodiscard]] db::settlement plan_paused_attempt(const row_ticket& row, const attempt_facts& facts,
                                                 const std::string& reason);

// Held for on-call review instead of an automatic resend (see provider::hold_reclaimed).
[[nodiscard]] db::settlement plan_hold(const row_ticket& row, std::string reason,
                                       std::chrono::system_clock::time_point now);

// Dead before any request (malformed row, unknown destination, failed validation).
[[nodiscard]] db::settlement plan_rejection(const row_ticket& row, std::string reason,
                                            std::chrono::system_clock::time_point now);

}  // namespace outbox

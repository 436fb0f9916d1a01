#include "dispatcher/engine/adaptive_wake.hpp"

#include <algorithm>

namespace outbox {

adaptive_wake::action adaptive_wake::after_claim(clock::time_point now, std::size_t rows_found) {
  // A claim at or after a pending hand-over recheck consumes it.
  while (rechecks_done_ < options_.handover_rechecks.size() &&
         now >= asleep_at_ + options_.handover_rechecks[rechecks_done_]) {
    ++rechecks_done_;
  }
  if (!enabled_) return awake_ ? action::publish_asleep : action::none;

  const bool recent = last_found_ && now - *last_found_ <= options_.linger;
  if (rows_found > 0) {
    last_found_ = now;
    if (now - window_start_ > options_.linger) {
      window_start_ = now;
      window_rows_ = 0;
    }
    window_rows_ += rows_found;
    if (!awake_) {
      const double seconds = std::chrono::duration<double>(options_.linger).count();
      const double threshold = std::max(2.0, options_.wake_rate * seconds);
      return static_cast<double>(window_rows_) >= threshold ? action::publish_awake : action::none;
    }
    return now - published_at_ >= options_.ttl / 3 ? action::publish_awake : action::none;
  }
  return awake_ && !recent ? action::publish_asleep : action::none;
}

void adaptive_wake::published(action a, clock::time_point now) {
  switch (a) {
    case action::publish_awake:
      awake_ = true;
      published_at_ = now;
      break;
    case action::publish_asleep:
      awake_ = false;
      asleep_at_ = now;
      rechecks_done_ = 0;
      break;
    case action::none: break;
  }
}

std::optional<adaptive_wake::clock::duration> adaptive_wake::max_idle(clock::time_point now) const {
  if (awake_) return options_.awake_poll;
  if (rechecks_done_ < options_.handover_rechecks.size()) {
    return std::max<clock::duration>(asleep_at_ + options_.handover_rechecks[rechecks_done_] - now,
                                     clock::duration::zero());
  }
  return std::nullopt;
}

}  // namespace outbox

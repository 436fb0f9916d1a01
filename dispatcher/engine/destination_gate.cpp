#include "dispatcher/engine/destination_gate.hpp"

namespace outbox {

void destination_gate::pause(time_point now, std::chrono::seconds length, std::string reason) {
  if (manual_) return;  // never shorten an on-call pause
  if (!since_) since_ = now;
  state_ = state::paused;
  until_ = now + length;
  reason_ = std::move(reason);
}

void destination_gate::manual_pause(std::string reason, time_point now) {
  if (!since_) since_ = now;
  manual_ = true;
  reason_ = std::move(reason);
}

bool destination_gate::resume() {
  const bool was = manual_ || state_ != state::open;
  manual_ = false;
  if (state_ == state::paused) state_ = state::open;
  consecutive_failures_ = 0;
  if (state_ == state::open) reason_ = configured_ ? "paused by configuration" : "";
  if (state_ == state::open && !configured_) since_.reset();
  return was;
}

void destination_gate::set_configured_paused(bool paused, time_point now) {
  if (paused == configured_) return;
  if (paused) {
    configure_paused(now);
    return;
  }
  configured_ = false;
  if (!manual_ && state_ == state::open) {
    reason_.clear();
    since_.reset();
  }
}

bool destination_gate::open(time_point) const { return !manual_ && !configured_ && state_ == state::open; }

bool destination_gate::probe_due(time_point now) const {
  return !manual_ && !configured_ && state_ == state::paused && now >= until_;
}

void destination_gate::probe_not_needed() {
  if (state_ == state::paused) state_ = state::open;
  reason_.clear();
  if (!manual_ && !configured_) since_.reset();
}

void destination_gate::probe_abandoned(time_point now) {
  if (state_ != state::probing) return;
  state_ = state::paused;
  until_ = now;
}

void destination_gate::probe_finished(bool healthy, time_point now) {
  if (state_ != state::probing) return;
  if (healthy) {
    state_ = state::open;
    reason_.clear();
    if (!manual_ && !configured_) since_.reset();
    consecutive_failures_ = 0;
  } else {
    // Not healthy and not paused again by the verdict: wait a circuit period before the next probe.
    state_ = state::paused;
    until_ = now + circuit_open_for;
  }
}

bool destination_gate::note_result(bool failing, std::span<const std::int64_t> rows, time_point now) {
  if (!failing) {
    consecutive_failures_ = 0;
    failing_rows_.clear();
    return false;
  }
  ++consecutive_failures_;
  if (failing_rows_.size() < circuit_min_rows) failing_rows_.insert(rows.begin(), rows.end());
  if (consecutive_failures_ < circuit_threshold || failing_rows_.size() < circuit_min_rows || state_ == state::paused) {
    return false;
  }
  consecutive_failures_ = 0;
  failing_rows_.clear();
  pause(now, circuit_open_for,
        "circuit open after " + std::to_string(circuit_threshold) + " consecutive failures (of at least " +
            std::to_string(circuit_min_rows) + " different rows)");
  return !manual_;
}

std::optional<destination_gate::time_point> destination_gate::reopens_at() const {
  if (manual_ || configured_ || state_ != state::paused) return std::nullopt;
  return until_;
}

}  // namespace outbox

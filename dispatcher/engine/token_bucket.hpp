#pragma once
// Token-bucket rate limit as a pure reservation: each caller takes a token now
// and is told how long to wait for it. Tokens may go negative, which queues
// callers fairly without a waiting list.
#include <algorithm>
#include <chrono>

namespace outbox {

class token_bucket {
 public:
  using clock = std::chrono::steady_clock;

  // rate_per_second <= 0 means unlimited.
  token_bucket(double rate_per_second, double burst, clock::time_point now)
      : rate_(rate_per_second), burst_(std::max(1.0, burst)), tokens_(burst_), last_(now) {}

  // A new rate and burst (the registry changed them); tokens saved up beyond the new burst go.
  void configure(double rate_per_second, double burst) {
    rate_ = rate_per_second;
    burst_ = std::max(1.0, burst);
    tokens_ = std::min(tokens_, burst_);
  }

  // Reserves one token; returns how long to wait before using it (zero if available now).
  [[nodiscard]] clock::duration reserve(clock::time_point now) {
    if (rate_ <= 0) return clock::duration::zero();
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    tokens_ -= 1;
    if (tokens_ >= 0) return clock::duration::zero();
    return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(-tokens_ / rate_));
  }

 private:
  double rate_;
  double burst_;
  double tokens_;
  clock::time_point last_;
};

}  // namespace outbox

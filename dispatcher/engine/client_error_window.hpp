#pragma once
// A destination's share of 4xx answers over its last N requests. Meta rates an
// app's Marketing API access tier by its error share over a rolling window of 500
// requests (below 15 % since 2026-05-04); a destination that keeps sending what
// Meta refuses spends the whole app's budget. The sender pauses a destination
// whose share crosses its MAX_4XX_SHARE (sender::note_client_errors).
#include <cstddef>
#include <vector>

namespace outbox {

class client_error_window {
 public:
  static constexpr std::size_t size = 500;          // Meta's window
  static constexpr std::size_t min_requests = 100;  // fewer: too few to judge a share

  void record(bool client_error) {
    if (slots_.size() < size) {
      slots_.push_back(client_error);
    } else {
      errors_ -= slots_[next_] ? 1 : 0;
      slots_[next_] = client_error;
      next_ = (next_ + 1) % size;
    }
    errors_ += client_error ? 1 : 0;
  }
  void reset() { slots_.clear(), next_ = 0, errors_ = 0; }

  [[nodiscard]] std::size_t requests() const { return slots_.size(); }
  [[nodiscard]] std::size_t errors() const { return errors_; }
  // True once enough requests are counted and their 4xx share exceeds `limit` (0: never).
  [[nodiscard]] bool over(double limit) const {
    return limit > 0 && requests() >= min_requests &&
           static_cast<double>(errors_) > limit * static_cast<double>(requests());
  }

 private:
  std::vector<bool> slots_;
  std::size_t next_ = 0;
  std::size_t errors_ = 0;
};

}  // namespace outbox

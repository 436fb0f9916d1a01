#pragma once
// When this dispatcher counts as "awake" for the adaptive wake mode
// (sql/0003_wake_modes.sql). Awake means: it will claim again within
// `awake_poll` without being notified, so the CRM's trigger may skip
// pg_notify. Pure logic; the engine does the publishing.
//
//  - It goes awake when its claims found rows at `wake_rate` or more over a
//    `linger`-long window. At lower rates each notification wakes a claim
//    for a row or two: notifications are cheap then (commits rarely queue on
//    NOTIFY's lock) and give the lowest latency, so it keeps using them.
//  - While awake it claims at least every `awake_poll`, and re-publishes
//    every ttl/3 so its entry never lapses while it is alive.
//  - After `linger` without finding rows it withdraws, then claims at once and
//    again after `handover_rechecks`: rows whose statements skipped the
//    notification just before the withdrawal are picked up without waiting
//    for the fallback poll (which still bounds the worst case).
#include <array>
#include <chrono>
#include <cstddef>
#include <optional>

namespace outbox {

struct adaptive_wake_options {
  std::chrono::steady_clock::duration linger = std::chrono::milliseconds(250);
  std::chrono::steady_clock::duration awake_poll = std::chrono::milliseconds(20);
  std::chrono::milliseconds ttl{10000};
  double wake_rate = 500;  // rows per second found by claims
  std::array<std::chrono::steady_clock::duration, 3> handover_rechecks{
      std::chrono::milliseconds(0), std::chrono::milliseconds(25), std::chrono::milliseconds(250)};
};

class adaptive_wake {
 public:
  using clock = std::chrono::steady_clock;
  enum class action { none, publish_awake, publish_asleep };

  explicit adaptive_wake(adaptive_wake_options options) : options_(options) {}

  // Adaptive mode on or off (the database's mode, or a poll-only dispatcher).
  // Turning it off while awake makes the next after_claim withdraw.
  void set_enabled(bool enabled) noexcept { enabled_ = enabled; }
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

  // After every claim: what to publish now. Call published() once it is done.
  [[nodiscard]] action after_claim(clock::time_point now, std::size_t rows_found);
  void published(action a, clock::time_point now);

  // How long the claim loop may wait before claiming again; nullopt: no limit
  // from this (notifications, the poll and the next-due timer apply).
  [[nodiscard]] std::optional<clock::duration> max_idle(clock::time_point now) const;

  [[nodiscard]] bool awake() const noexcept { return awake_; }
  [[nodiscard]] const adaptive_wake_options& options() const noexcept { return options_; }

 private:
  adaptive_wake_options options_;
  bool enabled_ = false;
  bool awake_ = false;
  std::optional<clock::time_point> last_found_;
  clock::time_point window_start_{};  // rate window, `linger` long
  std::size_t window_rows_ = 0;
  clock::time_point published_at_{};
  clock::time_point asleep_at_{};
  std::size_t rechecks_done_ = options_.handover_rechecks.size();  // none pending
};

}  // namespace outbox

#pragma once
// Whether a destination may be sent to: open, paused (by on-call, by the
// configuration, or automatically after a destination-wide failure or an open
// circuit), or probing (an automatic pause ended: one row goes out alone and
// its result reopens the destination or pauses it again). Paused and probing
// destinations are left out of the claim, so their backlog costs the database
// nothing. Pure: the clock comes in as an argument.
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>

namespace outbox {

class destination_gate {
 public:
  using time_point = std::chrono::system_clock::time_point;

  // Transport failures, 5xx and 429 in a row that open the circuit, when they
  // carried at least circuit_min_rows different rows: one poison row retried on a
  // quiet destination is that row's problem (its own backoff and attempt budget
  // deal with it), not proof that the receiver is down.
  static constexpr int circuit_threshold = 5;
  static constexpr std::size_t circuit_min_rows = 3;
  static constexpr std::chrono::seconds circuit_open_for{30};

  // Automatic pause until now + `length`, then a probe. Never shortens a manual pause.
  void pause(time_point now, std::chrono::seconds length, std::string reason);
  // On-call (`dispatcher pause`) or configured (PAUSED=true): until lifted;
  // `now` is when this process learnt of it.
  void manual_pause(std::string reason, time_point now);
  // Lifts an on-call pause; an automatic pause is lifted too ("retry now"). Returns true if it was paused.
  bool resume();
  // PAUSED=true in the configuration: nothing lifts it but a restart with another setting.
  void configure_paused(time_point now) {
    configured_ = true;
    reason_ = "paused by configuration";
    since_ = now;
  }

  // PAUSED changed in the registry: set or lifted without a restart.
  void set_configured_paused(bool paused, time_point now);

  // Rows may be claimed for this destination by the ordinary claim.
  [[nodiscard]] bool open(time_point now) const;
  // An automatic pause has ended and no probe is out yet: claim one row alone.
  [[nodiscard]] bool probe_due(time_point now) const;
  void probe_started() { state_ = state::probing; }
  // No row was waiting: nothing to probe, the destination is open again.
  void probe_not_needed();
  // The probe row made no request (rejected, held, released): probe another row now.
  void probe_abandoned(time_point now);
  // The probe's answer: healthy reopens, otherwise note_result/pause decide.
  void probe_finished(bool healthy, time_point now);

  // Counts consecutive failures and the rows they carried; returns true when this
  // result opened the circuit.
  [[nodiscard]] bool note_result(bool failing, std::span<const std::int64_t> rows, time_point now);

  [[nodiscard]] bool paused(time_point now) const { return !open(now); }
  [[nodiscard]] bool manually_paused() const { return manual_ || configured_; }
  [[nodiscard]] bool on_call_paused() const { return manual_; }
  [[nodiscard]] bool probing() const { return state_ == state::probing; }
  // When an automatic pause ends (for the claimer's timer); nullopt when none is running.
  [[nodiscard]] std::optional<time_point> reopens_at() const;
  [[nodiscard]] const std::string& reason() const { return reason_; }
  // When the destination stopped delivering: the first pause of a run of
  // pauses and probes that ends when it reopens; nullopt while it delivers.
  [[nodiscard]] std::optional<time_point> paused_since() const { return since_; }

 private:
  enum class state { open, paused, probing };
  state state_ = state::open;
  bool manual_ = false;
  bool configured_ = false;
  time_point until_{};
  std::string reason_;
  std::optional<time_point> since_;
  int consecutive_failures_ = 0;
  std::set<std::int64_t> failing_rows_;  // the rows of those failures
};

}  // namespace outbox

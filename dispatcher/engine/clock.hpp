#pragma once
// The engine's time (river's Archetype.Time): every part asks this clock, never
// std::chrono's clocks, so tests can hold time still and advance it
// (tests/support/manual_clock.hpp). Steady time is for waits and intervals;
// system time for what is stored, logged or compared with the database and the
// providers. Timers (clock_timer.hpp) fire by this clock too. The HTTP client's
// I/O deadlines stay on real time: they guard sockets, not engine decisions.
#include <chrono>

namespace outbox {

class clock_timer;

class engine_clock {
 public:
  using steady_time = std::chrono::steady_clock::time_point;
  using system_time = std::chrono::system_clock::time_point;

  engine_clock() = default;
  engine_clock(const engine_clock&) = delete;
  engine_clock& operator=(const engine_clock&) = delete;
  virtual ~engine_clock() = default;

  [[nodiscard]] virtual steady_time steady_now() const = 0;
  [[nodiscard]] virtual system_time system_now() const = 0;

  // A timer armed to `t.deadline()`. True when this clock fires it (clock_timer::fire)
  // once its time comes; false when the timer's own Asio timer keeps real time.
  [[nodiscard]] virtual bool schedule(clock_timer& /*t*/) { return false; }
  // The timer is cancelled, re-armed or destroyed: forget it.
  virtual void unschedule(clock_timer& /*t*/) {}
};

// The machine's clocks; the clock of every dispatcher process.
[[nodiscard]] engine_clock& real_clock();

}  // namespace outbox

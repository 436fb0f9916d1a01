#pragma once
// A clock that stands still until the test moves it (river's test time, ozo's
// time traits): engine tests run in virtual time, with no sleep and no poll.
// advance() moves time to each armed timer's deadline in turn, fires it and
// runs the io_context until nothing more is ready, so every coroutine a timer
// wakes has done its work (and armed its next timer) before time moves on.
#include <chrono>
#include <cstddef>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "dispatcher/engine/clock.hpp"
#include "dispatcher/engine/clock_timer.hpp"

namespace outbox::test {

class manual_clock final : public engine_clock {
 public:
  // Starts at a fixed system time, so tests read the same dates every run.
  explicit manual_clock(boost::asio::io_context& io,
                        system_time start = system_time{std::chrono::seconds{1'800'000'000}});

  [[nodiscard]] steady_time steady_now() const override { return steady_; }
  [[nodiscard]] system_time system_now() const override { return system_; }
  [[nodiscard]] bool schedule(clock_timer& t) override;
  void unschedule(clock_timer& t) override;

  // Moves time forward by `d`, firing the timers due on the way, in deadline order.
  void advance(std::chrono::steady_clock::duration d);
  // Moves time to the next armed timer's deadline and fires it (and any due with
  // it); false when no timer is armed.
  bool advance_to_next();
  // Runs what is ready without moving time.
  void settle();
  // Timers armed now.
  [[nodiscard]] std::size_t armed() const noexcept { return timers_.size(); }

 private:
  void fire_due();
  void move_to(steady_time t);

  boost::asio::io_context& io_;
  steady_time steady_;
  system_time system_;
  std::vector<clock_timer*> timers_;
};

}  // namespace outbox::test

#pragma once
// A one-shot timer that keeps its clock's time: an Asio steady_timer on the
// machine's clock; on a manual clock, fired by the clock when a test advances
// past its deadline. Used like Asio's timer: arm it, then wait; arming again or
// cancel() ends a pending wait early (async_wait answers false).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/engine/clock.hpp"

namespace outbox {

class clock_timer {
 public:
  clock_timer(boost::asio::any_io_executor ex, outbox::engine_clock& c);
  clock_timer(const clock_timer&) = delete;
  clock_timer& operator=(const clock_timer&) = delete;
  ~clock_timer();

  void expires_at(engine_clock::steady_time deadline);
  void expires_after(std::chrono::steady_clock::duration d) { expires_at(clock_.steady_now() + d); }
  // Ends a pending wait early.
  void cancel();
  // Waits for the deadline or a cancel; true when the deadline came.
  [[nodiscard]] boost::asio::awaitable<bool> async_wait();

  [[nodiscard]] engine_clock::steady_time deadline() const noexcept { return deadline_; }
  // The clock's call when the deadline came (a manual clock only).
  void fire();

 private:
  outbox::engine_clock& clock_;
  boost::asio::steady_timer timer_;
  engine_clock::steady_time deadline_{};
  bool scheduled_ = false;  // the clock fires it
  bool fired_ = false;
};

}  // namespace outbox

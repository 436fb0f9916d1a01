#include "tests/support/manual_clock.hpp"

#include <algorithm>

namespace outbox::test {

manual_clock::manual_clock(boost::asio::io_context& io, system_time start)
    : io_(io), steady_(steady_time{std::chrono::hours{1}}), system_(start) {}

bool manual_clock::schedule(clock_timer& t) {
  timers_.push_back(&t);
  return true;
}

void manual_clock::unschedule(clock_timer& t) { std::erase(timers_, &t); }

void manual_clock::move_to(steady_time t) {
  if (t <= steady_) return;
  system_ += t - steady_;
  steady_ = t;
}

void manual_clock::settle() {
  io_.restart();
  io_.poll();
}

void manual_clock::fire_due() {
  for (;;) {
    settle();
    const auto due =
        std::find_if(timers_.begin(), timers_.end(), [&](clock_timer* t) { return t->deadline() <= steady_; });
    if (due == timers_.end()) return;
    clock_timer* t = *due;
    timers_.erase(due);
    t->fire();
  }
}

void manual_clock::advance(std::chrono::steady_clock::duration d) {
  const auto target = steady_ + d;
  fire_due();
  for (;;) {
    const auto next = std::min_element(timers_.begin(), timers_.end(),
                                       [](clock_timer* a, clock_timer* b) { return a->deadline() < b->deadline(); });
    if (next == timers_.end() || (*next)->deadline() > target) break;
    move_to((*next)->deadline());
    fire_due();
  }
  move_to(target);
  fire_due();
}

bool manual_clock::advance_to_next() {
  fire_due();
  const auto next = std::min_element(timers_.begin(), timers_.end(),
                                     [](clock_timer* a, clock_timer* b) { return a->deadline() < b->deadline(); });
  if (next == timers_.end()) return false;
  move_to((*next)->deadline());
  fire_due();
  return true;
}

}  // namespace outbox::test

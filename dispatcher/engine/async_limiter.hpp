#pragma once
// A counting semaphore for coroutines on one thread: at most `limit` holders;
// others wait in FIFO order. abort_waiters() wakes everyone still waiting with
// `false` (shutdown), so no coroutine is left suspended forever.
#include <cstddef>
#include <deque>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox {

class async_limiter {
 public:
  async_limiter(boost::asio::any_io_executor ex, std::size_t limit) : ex_(ex), limit_(limit == 0 ? 1 : limit) {}

  // True once a slot is held (call release() later); false if aborted while waiting.
  boost::asio::awaitable<bool> async_acquire() {
    if (aborted_) co_return false;
    if (used_ < limit_ && waiters_.empty()) {
      ++used_;
      co_return true;
    }
    waiter w{boost::asio::steady_timer(ex_, boost::asio::steady_timer::time_point::max())};
    waiters_.push_back(&w);
    (void)co_await w.timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    co_return w.granted;
  }

  void release() {
    if (!waiters_.empty() && used_ <= limit_) {
      waiter* next = waiters_.front();  // the slot passes straight to the next waiter
      waiters_.pop_front();
      next->granted = true;
      next->timer.cancel();
      return;
    }
    if (used_ > 0) --used_;
  }

  // A new CONCURRENCY (the registry changed it): a higher one lets waiters in
  // at once; a lower one takes effect as slots are released.
  void set_limit(std::size_t limit) {
    limit_ = limit == 0 ? 1 : limit;
    while (used_ < limit_ && !waiters_.empty()) {
      ++used_;
      waiter* next = waiters_.front();
      waiters_.pop_front();
      next->granted = true;
      next->timer.cancel();
    }
  }

  // Callers waiting for a slot now.
  [[nodiscard]] std::size_t waiting() const noexcept { return waiters_.size(); }

  void abort_waiters() {
    aborted_ = true;
    while (!waiters_.empty()) {
      waiters_.front()->timer.cancel();
      waiters_.pop_front();
    }
  }

 private:
  struct waiter {
    boost::asio::steady_timer timer;
    bool granted = false;
  };
  boost::asio::any_io_executor ex_;
  std::size_t limit_;
  std::size_t used_ = 0;
  bool aborted_ = false;
  std::deque<waiter*> waiters_;
};

}  // namespace outbox

#pragma once
// Event-driven waiting for tests: producers call notify(), a coroutine waits
// until a condition holds or a deadline passes. No sleeping, no polling loops.
#include <chrono>
#include <functional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox::test {

class async_signal {
 public:
  explicit async_signal(boost::asio::any_io_executor ex) : timer_(ex) {}

  void notify() { timer_.cancel(); }

  // True once `done()` holds; false if `timeout` passes first.
  boost::asio::awaitable<bool> wait_until(std::function<bool()> done, std::chrono::steady_clock::duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) co_return false;
      timer_.expires_at(deadline);
      (void)co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    co_return true;
  }

 private:
  boost::asio::steady_timer timer_;
};

}  // namespace outbox::test

#pragma once
// At most N TLS handshakes at once (the HTTPS client keeps one gate per origin). A handshake holds OpenSSL's
// read and write buffers, the peer's chain and the key exchange, about 50 kB;
// a destination at CONCURRENCY 50 opened its 50 connections in one burst and
// kept the peak of all of them resident (3.4 MB, issue 29). The handshakes
// compete for the same CPU anyway, so a few at a time finish about as soon.
// Lives on the client's thread.
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

namespace outbox::providers::detail {

class handshake_gate {
 public:
  explicit handshake_gate(std::size_t slots) : free_(slots) {}

  // A slot held until it goes; release() gives it to the next waiter.
  class slot {
   public:
    slot() = default;
    explicit slot(handshake_gate* gate) : gate_(gate) {}
    slot(slot&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    slot& operator=(slot&&) = delete;
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot() {
      if (gate_ != nullptr) gate_->release();
    }
    [[nodiscard]] bool held() const { return gate_ != nullptr; }

   private:
    handshake_gate* gate_ = nullptr;
  };

  // A slot, or an empty one when none came free by `deadline`.
  [[nodiscard]] boost::asio::awaitable<slot> async_enter(boost::asio::any_io_executor ex,
                                                         std::chrono::steady_clock::time_point deadline);

 private:
  struct waiter {
    explicit waiter(const boost::asio::any_io_executor& ex) : timer(ex) {}
    boost::asio::steady_timer timer;
    bool handed = false;  // release() gave it the slot
  };
  void release();

  std::size_t free_;
  std::deque<std::shared_ptr<waiter>> waiting_;
};

}  // namespace outbox::providers::detail

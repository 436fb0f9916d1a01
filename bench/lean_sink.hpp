#pragma once
// A minimal HTTPS endpoint for the benchmark: TLS (a throwaway test CA), HTTP/1.1
// keep-alive, a fixed `200 {}` answer, and for every request only what the
// figures need: the `webhook-id` header (the idempotency key) and the
// steady_clock time the request's last byte was read. Headers are scanned, not
// parsed into maps, and nothing else is stored, so the sink spends as little of
// the shared CPU as possible (tests/support/test_https_server keeps whole
// requests and Beast messages, which costs the dispatcher CPU on a 2-core box).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "tests/support/test_tls.hpp"

namespace outbox::bench {

class lean_sink {
 public:
  struct hit {
    std::string key;  // webhook-id; empty when the request had none
    std::chrono::steady_clock::time_point at;
  };

  // Listens on 127.0.0.1 (random port) with `cert`, on `threads` threads.
  lean_sink(const test::certificate_pem& cert, int threads);
  ~lean_sink();
  lean_sink(const lean_sink&) = delete;
  lean_sink& operator=(const lean_sink&) = delete;

  [[nodiscard]] std::uint16_t port() const;
  [[nodiscard]] std::string url(std::string_view path) const;
  [[nodiscard]] std::size_t count() const;        // requests answered so far
  [[nodiscard]] std::size_t connections() const;  // TLS sessions established
  [[nodiscard]] std::vector<hit> hits() const;    // a copy, in arrival order
  void stop();

  struct state;  // shared with the session coroutines

 private:
  std::shared_ptr<state> st_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
};

}  // namespace outbox::bench

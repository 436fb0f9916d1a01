#pragma once
// A minimal HTTPS endpoint for the benchmark: TLS (a throwaway test CA), HTTP/1.1
// keep-alive, and for every event only what the figures need: its key and the
// time the request's last byte was read. Two protocols:
//  - webhook: one event per request, key = the `webhook-id` header, answer `200 {}`;
//  - meta: Meta's `POST /{version}/{pixel}/events` with up to 1,000 events in
//    `data`; key = each event's `event_id` (found by a plain scan of the body
//    for `"event_id":"`), answer `200 {"events_received": N, "fbtrace_id": "x"}`.
//    Nothing else is checked (no token, no hashing rules: tests/support/fake_meta does that).
// Headers are scanned, not
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

#include "bench/event_sink.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::bench {

class lean_sink final : public event_sink {
 public:
  enum class protocol { webhook, meta };

  using hit = sink_hit;

  // Listens on 127.0.0.1 (random port) with `cert`, on `threads` threads.
  lean_sink(const test::certificate_pem& cert, int threads, protocol p = protocol::webhook);
  ~lean_sink() override;
  lean_sink(const lean_sink&) = delete;
  lean_sink& operator=(const lean_sink&) = delete;

  [[nodiscard]] std::uint16_t port() const override;
  [[nodiscard]] std::string url(std::string_view path) const override;
  [[nodiscard]] std::size_t count() const override;        // events received so far (webhook: requests)
  [[nodiscard]] std::size_t requests() const override;     // requests answered so far
  [[nodiscard]] std::size_t connections() const override;  // TLS sessions established
  // A copy of the events from index `from` on, in arrival order.
  [[nodiscard]] std::vector<hit> hits(std::size_t from = 0) const override;
  void stop();

  struct state;  // shared with the session coroutines

 private:
  std::shared_ptr<state> st_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
};

}  // namespace outbox::bench

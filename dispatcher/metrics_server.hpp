#pragma once
// Plain-HTTP endpoint for operations: /metrics (Prometheus), /healthz (the
// process is alive) and /readyz (database and LISTEN connection are up).
// Bind it to loopback or a private interface; it serves no secrets.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace outbox {

class metrics_server {
 public:
  using render_fn = std::function<std::string()>;
  // (ready, one-line reason when not ready)
  using ready_fn = std::function<std::pair<bool, std::string>()>;

  // `address` is "host:port" (port 0 picks a free one). Throws std::runtime_error
  // with a clear message when the address is malformed or cannot be bound.
  metrics_server(boost::asio::any_io_executor ex, const std::string& address, render_fn render, ready_fn ready);
  ~metrics_server();

  boost::asio::awaitable<void> async_run();
  void stop();
  [[nodiscard]] std::uint16_t port() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace outbox

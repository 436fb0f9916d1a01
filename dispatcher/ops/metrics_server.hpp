#pragma once
// Plain-HTTP endpoint for operations: /metrics (Prometheus), /status (a
// read-only HTML page, status_page.hpp), /healthz (the process is alive) and
// /readyz (database and LISTEN connection are up). Bind it to loopback or a
// private interface; it serves no secrets and no CRM data.
//
// Anyone who can reach the port must not be able to starve the dispatcher of
// file descriptors (its database connection needs them), so connections are
// bounded: at most `max_connections` at once, each given `request_timeout` to
// send a whole request of at most `max_request_bytes`. When all slots are taken
// the oldest connection still waiting for its request is closed to make room
// (a scraper sends its request at once, an idle client does not); when every
// slot is busy answering, the new connection is closed at once.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "dispatcher/ops/metrics.hpp"

namespace outbox {

struct metrics_server_limits {
  std::size_t max_connections = 16;
  std::chrono::milliseconds request_timeout{5000};  // to send one whole request (idle keep-alive included)
  std::chrono::milliseconds write_timeout{10000};   // to take one whole response
  std::size_t max_request_bytes = 8192;             // request line, headers and body together
};

class metrics_server {
 public:
  using render_fn = std::function<std::string()>;
  using snapshot_fn = std::function<outbox::metrics()>;
  // (ready, one-line reason when not ready)
  using ready_fn = std::function<std::pair<bool, std::string>()>;

  // `address` is "host:port" (port 0 picks a free one). Throws std::runtime_error
  // with a clear message when the address is malformed or cannot be bound.
  // Serves /metrics and /status from `snapshot` (engine::metrics_snapshot), which
  // is also sampled once a minute for the page's "last hour" counts.
  metrics_server(boost::asio::any_io_executor ex, const std::string& address, snapshot_fn snapshot, ready_fn ready,
                 metrics_server_limits limits = {});
  // Serves `render()` as /metrics, and no /status (404).
  metrics_server(boost::asio::any_io_executor ex, const std::string& address, render_fn render, ready_fn ready,
                 metrics_server_limits limits = {});
  // Serves /healthz and /readyz only (OUTBOX_PROBE_ADDRESS): a listener whose
  // connection slots no flood of /metrics or /status requests can take.
  struct probes_only_t {};
  static constexpr probes_only_t probes_only{};
  metrics_server(boost::asio::any_io_executor ex, const std::string& address, probes_only_t, ready_fn ready,
                 metrics_server_limits limits = {});
  ~metrics_server();

  boost::asio::awaitable<void> async_run();
  // Stops accepting and sampling, and closes every open connection.
  void stop();
  [[nodiscard]] std::uint16_t port() const;
  // Connections being served now (for tests and diagnostics).
  [[nodiscard]] std::size_t open_connections() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace outbox

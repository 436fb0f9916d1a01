#pragma once
// Reading a dispatcher's /metrics from a test thread (blocking socket: this is
// not an event loop), and a local port to put the metrics server on.
#include <cstdint>
#include <string>

namespace outbox::test {

// GET <path> on 127.0.0.1:<port>; the whole response, headers included.
[[nodiscard]] std::string http_get_local(std::uint16_t port, const std::string& path);
// GET /metrics on 127.0.0.1:<port>; the whole response, headers included.
[[nodiscard]] std::string scrape_metrics(std::uint16_t port);
// A port that was free a moment ago (OUTBOX_METRICS_ADDRESS does not take port 0).
[[nodiscard]] std::uint16_t free_local_port();

}  // namespace outbox::test

#pragma once
// HTTPS client with per-origin keep-alive pools. Moves bytes and reports what
// happened as an http_result; it never judges status codes (providers do).
//
// Not thread-safe: construct it and call every member on the thread that runs
// its executor. Many coroutines may await async_send at the same time; each
// takes its own connection. The client must outlive every async_send.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "providers/http/http_transport.hpp"
#include "providers/http/http_types.hpp"
#include "providers/http/https_resolver.hpp"

namespace outbox::providers {

struct https_client_options {
  std::chrono::milliseconds connect_timeout{3000};    // DNS lookup + TCP connect
  std::chrono::milliseconds handshake_timeout{3000};  // TLS handshake
  std::chrono::milliseconds request_timeout{10000};   // write + read of one exchange
  std::chrono::milliseconds idle_timeout{30000};      // pooled connection max idle; 0 disables reuse
  // Body cap. Headers are capped too (http_response_reader.hpp): 64 KiB of
  // status lines, fields and trailers, 100 fields, 256-byte chunk extensions.
  std::size_t max_response_bytes = 1 << 20;
  std::size_t max_idle_per_origin = 64;
  // A pooled connection idle this long is checked for a close by the server
  // (one recv) before it is reused; one used more recently is reused at once.
  // Servers close idle keep-alive connections after seconds (gunicorn 2 s,
  // Node 5 s, nginx 75 s), and a close in between (a restart) is covered by
  // the resend-once rule below. The check was one of a pooled request's three
  // or four system calls. 0 checks every reuse.
  std::chrono::milliseconds check_idle_after{500};
  std::string extra_ca_file;  // PEM, added to the system trust store (for tests)
  // Blocking lookup run on a thread per host name (see https_resolver.hpp);
  // replaceable for tests. IP literals never reach it.
  name_resolver resolver = system_name_resolver;

  // The longest one async_send can take: connect + handshake + request
  // timeouts. It is enforced as one deadline set when async_send starts and
  // capping every step, including the lookup and the one resend after a stale
  // keep-alive connection (which gets only what is left), so it holds to
  // within scheduling delay. A background TLS close_notify is not counted.
  [[nodiscard]] std::chrono::milliseconds worst_case_attempt() const {
    return connect_timeout + handshake_timeout + request_timeout;
  }
};

class https_client final : public http_transport {
 public:
  // Throws std::runtime_error if extra_ca_file cannot be loaded.
  https_client(boost::asio::any_io_executor ex, https_client_options opts);
  ~https_client() override;
  https_client(const https_client&) = delete;
  https_client& operator=(const https_client&) = delete;

  // Sends one request (https://, or plain http://). Never throws for I/O
  // failures: they come back as result.error. A reused keep-alive connection
  // that turns out dead before any response byte arrives is retried once on a
  // fresh connection (result.resent_on_fresh_connection tells when the whole
  // request had gone out first), and so is one whose answer is a 408 (a server's
  // notice to an idle connection, read before our request); nothing else is retried. Interim 1xx
  // responses are skipped. Completes within opts.worst_case_attempt().
  // Host, Content-Length and Transfer-Encoding are set here (given values are
  // dropped); User-Agent and Content-Type (application/json, when there is a
  // body) are set unless given.
  [[nodiscard]] boost::asio::awaitable<http_result> async_send(http_request req) override;

  // Pooled connections currently idle, over all origins.
  [[nodiscard]] std::size_t idle_connections() const;
  // Closes every idle pooled connection (at shutdown).
  void close_idle() override;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace outbox::providers

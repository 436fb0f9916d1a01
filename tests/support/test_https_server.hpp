#pragma once
// A real HTTPS (or plain HTTP) server on 127.0.0.1 for tests. It records every
// request and answers from a script of response plans, then from a fallback.
//
// Two ways to run it:
//  - on the caller's executor: the caller runs the io_context; every call must
//    then come from that thread (or while the io_context is not running), and
//    only async_wait_for_requests may be used to wait;
//  - on its own io_context and background thread: every call is thread-safe,
//    and wait_for_requests may block the calling thread.
// Recorded requests, plans and counters are always guarded (mutex / atomics).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "providers/http/http_types.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::test {

struct recorded_request {
  std::string method;
  std::string target;
  providers::header_list headers;  // names lower-cased
  std::string body;
  std::chrono::steady_clock::time_point arrived_at;
  std::size_t connection = 0;  // 1-based number of the TCP connection it came on

  [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
};

// How to answer one request.
struct response_plan {
  enum class kind {
    respond,                 // status + headers + body
    hang,                    // never answer; hold the connection until the client or stop() closes it
    close_mid_response,      // status line, headers, half the body, then close
    close_without_response,  // close right after reading the request
    raw,                     // `raw_pieces` as they are, `gap` apart; then the next request unless closing()
    flood,                   // `raw_pieces`, then `flood_piece` until `flood_bytes` went out or the client left
  };
  kind action = kind::respond;
  int status = 200;
  providers::header_list headers;
  std::string body = "{}";
  std::chrono::milliseconds delay{0};   // wait this long before acting
  bool keep_alive = true;               // false: answer with Connection: close and close
  std::vector<std::string> raw_pieces;  // raw, flood, close_mid_response
  std::chrono::milliseconds gap{0};
  std::string flood_piece;
  std::size_t flood_bytes = 0;

  [[nodiscard]] static response_plan reply(int status, std::string body = "{}", providers::header_list headers = {});
  [[nodiscard]] static response_plan hang();
  [[nodiscard]] static response_plan close_mid_response(std::string body = std::string(1024, 'x'));
  [[nodiscard]] static response_plan close_without_response();
  // Hostile or unusual servers: bytes written exactly as given.
  [[nodiscard]] static response_plan raw(std::vector<std::string> pieces, std::chrono::milliseconds gap = {});
  [[nodiscard]] static response_plan flood(std::string head, std::string piece, std::size_t total_bytes);
  [[nodiscard]] response_plan after(std::chrono::milliseconds d) const;  // same plan, delayed
  [[nodiscard]] response_plan closing() const;                           // same plan, Connection: close
};

// Decides the answer when no scripted plan is left. Runs on the server's thread.
using responder = std::function<response_plan(const recorded_request&)>;

struct test_server_options {
  // Serve TLS with this certificate (see test_ca::issue); plain HTTP when empty.
  std::optional<certificate_pem> certificate;
  // Answer each request once its header is read, then read its body: as a
  // server refusing an upload early does (a 413 before the body is in). The
  // connections get a small receive buffer, so a large body waits for the read.
  bool answer_before_body = false;
};

class test_https_server {
 public:
  // Serves on the caller's executor (see above).
  test_https_server(boost::asio::any_io_executor ex, test_server_options opts);
  // Serves on its own io_context and background thread.
  explicit test_https_server(test_server_options opts);
  ~test_https_server();  // stop()
  test_https_server(const test_https_server&) = delete;
  test_https_server& operator=(const test_https_server&) = delete;

  [[nodiscard]] std::uint16_t port() const;
  // "https://127.0.0.1:<port><path>" (http:// when plain); `host` replaces 127.0.0.1.
  [[nodiscard]] std::string url(std::string_view path = "/", std::string_view host = "127.0.0.1") const;

  // Appends plans used in order, one per request; then the fallback answers
  // (by default 200 with body {}).
  void script(std::vector<response_plan> plans);
  void set_fallback(responder fallback);

  [[nodiscard]] std::vector<recorded_request> requests() const;  // a copy
  [[nodiscard]] std::size_t request_count() const;
  [[nodiscard]] std::size_t accepted_connections() const;
  [[nodiscard]] std::size_t tls_handshakes() const;  // completed ones
  // Response bytes handed to the kernel so far (every kind of plan).
  [[nodiscard]] std::size_t bytes_written() const;

  // True once `n` requests were recorded, false after `timeout`. Blocks the
  // calling thread: only for the own-thread mode, never from the server thread.
  [[nodiscard]] bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const;
  // Same, for a coroutine on any executor; works in both modes.
  [[nodiscard]] boost::asio::awaitable<bool> async_wait_for_requests(std::size_t n,
                                                                     std::chrono::milliseconds timeout) const;

  // Closes, without TLS close_notify, every kept-alive connection waiting for
  // its next request; connections busy with a request close once answered.
  // Returns how many connections were closed or marked.
  std::size_t close_idle_connections();

  // Stops accepting and closes every connection; recorded data stays readable.
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace outbox::test

#pragma once
// One connection of the HTTPS client and the steps on it: TCP connect, TLS
// handshake, one request/response exchange, polite retirement. Each step
// takes an absolute deadline and reports failures as values.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "providers/http/http_request_builder.hpp"
#include "providers/http/http_response_reader.hpp"
#include "providers/http/http_types.hpp"
#include "providers/http/tls_session.hpp"

namespace outbox::providers::detail {

using clock = std::chrono::steady_clock;

struct connection {
  connection(const boost::asio::any_io_executor& ex, bool use_tls) : stream(ex), tls(use_tls) {}

  boost::beast::tcp_stream stream;
  std::optional<tls_session> session;  // https:// once async_handshake has started it
  bool tls;
  clock::time_point idle_since{};

  [[nodiscard]] boost::beast::tcp_stream& tcp() { return stream; }
};
using connection_ptr = std::unique_ptr<connection>;

struct failure {
  transport_error kind = transport_error::none;
  std::string message;
};

struct opened {
  connection_ptr conn;  // null on failure
  failure error;
};

struct exchange_outcome {
  std::optional<http_response> response;  // set when a complete final response was read
  failure error;
  bool keep_alive = false;
  bool wrote_bytes = false;  // some of the request went out
  bool wrote_all = false;    // all of it did
  // The peer closed or reset before sending a single response byte: on a
  // reused connection this is the stale keep-alive race, safe to resend once.
  bool closed_before_response = false;
};

[[nodiscard]] std::string ms_text(std::chrono::milliseconds d);

// TCP connection to the first of `addresses` that accepts, by `deadline`;
// `budget` only names the timeout in the error text.
[[nodiscard]] boost::asio::awaitable<opened> async_connect(const boost::asio::any_io_executor& ex,
                                                           const target_url& url,
                                                           std::vector<boost::asio::ip::address> addresses,
                                                           clock::time_point deadline,
                                                           std::chrono::milliseconds budget);

// TLS handshake with SNI and certificate + host name verification, by `deadline`.
[[nodiscard]] boost::asio::awaitable<failure> async_handshake(connection& conn, boost::asio::ssl::context& ctx,
                                                              const target_url& url, clock::time_point deadline);

// Writes `request` and reads its final response through http_response_reader, by `deadline`.
[[nodiscard]] boost::asio::awaitable<exchange_outcome> async_exchange(connection& conn, const wire_request& request,
                                                                      const std::string& where,
                                                                      const response_limits& limits,
                                                                      clock::time_point deadline);

// A pooled connection the server already closed shows EOF to a non-blocking
// peek; skip it rather than write into a dead socket. Waiting data (say a TLS
// close_notify) is left alone: the resend-once rule covers that case.
[[nodiscard]] bool peer_has_closed(connection& conn);

// Says goodbye politely (TLS close_notify) in the background, within `timeout`.
void retire(const boost::asio::any_io_executor& ex, connection_ptr conn, std::chrono::milliseconds timeout);

}  // namespace outbox::providers::detail

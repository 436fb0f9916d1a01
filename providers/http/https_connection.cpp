#include "providers/http/https_connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <tuple>
#include <utility>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/verb.hpp>

namespace outbox::providers::detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

[[nodiscard]] milliseconds left_until(clock::time_point deadline) {
  return std::max(milliseconds::zero(), std::chrono::ceil<milliseconds>(deadline - clock::now()));
}

[[nodiscard]] bool is_peer_closed(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::connection_aborted || ec == asio::error::broken_pipe || ec == ssl::error::stream_truncated;
}

[[nodiscard]] failure write_failure(const error_code& ec, const std::string& where, milliseconds timeout) {
  if (ec == beast::error::timeout)
    return {transport_error::timeout, "sending the request to " + where + " timed out after " + ms_text(timeout)};
  return {transport_error::connection_reset,
          "connection to " + where + " lost while sending the request: " + ec.message()};
}

[[nodiscard]] failure read_failure(const error_code& ec, const std::string& where, milliseconds timeout,
                                   const response_limits& limits) {
  if (ec == beast::error::timeout)
    return {transport_error::timeout, "no complete response from " + where + " within " + ms_text(timeout)};
  if (is_size_refusal(ec))
    return {transport_error::response_too_large,
            "response from " + where + " refused: " + describe_read_error(ec, limits)};
  if (is_peer_closed(ec) || ec == http::error::partial_message)
    return {transport_error::connection_reset,
            where + " closed the connection before a complete response (" + ec.message() + ")"};
  if (ec.category() == response_error_category() ||
      ec.category() == http::make_error_code(http::error::bad_version).category())
    return {transport_error::bad_response,
            "invalid HTTP response from " + where + ": " + describe_read_error(ec, limits)};
  return {transport_error::connection_reset, "reading the response from " + where + " failed: " + ec.message()};
}

[[nodiscard]] failure handshake_failure(const error_code& ec, SSL* ssl, const std::string& where,
                                        milliseconds timeout) {
  if (ec == beast::error::timeout)
    return {transport_error::timeout, "TLS handshake with " + where + " timed out after " + ms_text(timeout)};
  if (const long verify = SSL_get_verify_result(ssl); verify != X509_V_OK)
    return {transport_error::tls_handshake, "TLS handshake with " + where + " failed: certificate verify failed (" +
                                                X509_verify_cert_error_string(verify) + ")"};
  return {transport_error::tls_handshake, "TLS handshake with " + where + " failed: " + ec.message()};
}

// The two transports an exchange runs on: the socket itself (http://) and TLS
// on it (https://), each with its own way to keep the deadline.
class plain_transport {
 public:
  plain_transport(beast::tcp_stream& stream, clock::time_point deadline) : stream_(stream) {
    stream_.expires_at(deadline);  // every operation on the stream, write and read together
  }
  asio::awaitable<std::tuple<error_code, std::size_t>> async_write(asio::const_buffer data) {
    co_return co_await asio::async_write(stream_, data, use_tuple);
  }
  asio::awaitable<std::tuple<error_code, std::size_t>> async_read_some(asio::mutable_buffer room) {
    co_return co_await stream_.async_read_some(room, use_tuple);
  }

 private:
  beast::tcp_stream& stream_;
};

class tls_transport {
 public:
  tls_transport(tls_session& session, clock::time_point deadline)
      : session_(session), guard_(session.watch(deadline)) {}
  asio::awaitable<std::tuple<error_code, std::size_t>> async_write(asio::const_buffer data) {
    co_return co_await session_.async_write(data);
  }
  asio::awaitable<std::tuple<error_code, std::size_t>> async_read_some(asio::mutable_buffer room) {
    co_return co_await session_.async_read_some(room);
  }

 private:
  tls_session& session_;
  tls_session::deadline_guard guard_;
};

// Reads until the reader holds a final response or something fails.
template <class Transport>
asio::awaitable<error_code> async_read_response(Transport& transport, http_response_reader& reader) {
  // Most answers are a few hundred bytes. A 64 KB room for each was a fresh
  // allocation, page faults included, on every request; the room doubles
  // whenever a read fills it.
  std::size_t room = 4096;
  for (;;) {
    const auto buffer = reader.prepare(room);
    auto [read_ec, n] = co_await transport.async_read_some(buffer);
    if (n == buffer.size() && room < 64 * 1024) room *= 2;
    if (auto parse_ec = reader.commit(n)) co_return parse_ec;
    if (reader.done()) co_return error_code{};
    if (read_ec == asio::error::eof) co_return reader.commit_eof();
    if (read_ec) co_return read_ec;
  }
}

template <class Transport>
asio::awaitable<exchange_outcome> async_exchange_on(Transport& transport, const wire_request& request,
                                                    const std::string& where, const response_limits& limits,
                                                    milliseconds budget) {
  exchange_outcome out;

  // Two writes, not one of a two-buffer std::array: through Boost 1.81's TLS
  // stream that write never completed for a large body (the https_client test
  // "a large body arrives whole..." fails with it).
  auto [write_ec, written] = co_await transport.async_write(asio::buffer(request.bytes));
  if (!write_ec && !request.large_body.empty()) {
    std::size_t body_written = 0;
    std::tie(write_ec, body_written) = co_await transport.async_write(asio::buffer(request.large_body));
    written += body_written;
  }
  out.wrote_bytes = written > 0;
  if (write_ec) {
    out.error = write_failure(write_ec, where, budget);
    out.closed_before_response = write_ec != beast::error::timeout;
    co_return out;
  }
  out.wrote_all = true;

  http_response_reader reader{limits, request.head};
  if (const error_code read_ec = co_await async_read_response(transport, reader)) {
    out.error = read_failure(read_ec, where, budget, limits);
    out.closed_before_response = !reader.got_some() && is_peer_closed(read_ec);
    co_return out;
  }
  out.keep_alive = reader.keep_alive();
  out.response = reader.take_response();
  co_return out;
}

asio::awaitable<void> async_retire(connection_ptr conn, milliseconds timeout) {
  const auto guard = conn->session->watch(clock::now() + timeout);
  const error_code ec = co_await conn->session->async_shutdown();
  (void)ec;  // a server that closed first is normal
}

}  // namespace

std::string ms_text(milliseconds d) { return std::to_string(d.count()) + " ms"; }

asio::awaitable<opened> async_connect(const asio::any_io_executor& ex, const target_url& url,
                                      std::vector<asio::ip::address> addresses, clock::time_point deadline,
                                      milliseconds budget) {
  std::vector<tcp::endpoint> endpoints;
  for (const auto& address : addresses) endpoints.emplace_back(address, url.port);
  opened out;
  auto conn = std::make_unique<connection>(ex, url.tls);
  conn->tcp().expires_at(deadline);
  auto [connect_ec, endpoint] = co_await conn->tcp().async_connect(endpoints, use_tuple);
  (void)endpoint;
  if (connect_ec == beast::error::timeout) {
    out.error = {transport_error::timeout, "connecting to " + url.host_header + " timed out after " + ms_text(budget)};
  } else if (connect_ec) {
    out.error = {transport_error::connect, "cannot connect to " + url.host_header + ": " + connect_ec.message()};
  } else {
    error_code ignored;
    conn->tcp().socket().set_option(tcp::no_delay(true), ignored);  // small request/response exchanges
    out.conn = std::move(conn);
  }
  co_return out;
}

asio::awaitable<failure> async_handshake(connection& conn, ssl::context& ctx, const target_url& url,
                                         clock::time_point deadline) {
  try {
    conn.session.emplace(ctx.native_handle(), conn.tcp().socket());
  } catch (const std::exception& e) {
    co_return failure{transport_error::tls_handshake, "TLS with " + url.host_header + ": " + e.what()};
  }
  SSL* ssl = conn.session->native_handle();
  // SNI is for names only (RFC 6066); IP literals are still verified below.
  if (!url.host_is_ip && SSL_set_tlsext_host_name(ssl, url.host.c_str()) != 1)
    co_return failure{transport_error::tls_handshake, "cannot set TLS server name for " + url.host_header};
  // OpenSSL checks the name (or address) with the chain (the context verifies
  // peers): a mismatch is X509_V_ERR_HOSTNAME_MISMATCH or _IP_ADDRESS_MISMATCH.
  const bool named = url.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url.host.c_str()) == 1
                                    : SSL_set1_host(ssl, url.host.c_str()) == 1;
  if (!named) co_return failure{transport_error::tls_handshake, "cannot verify TLS peers as " + url.host_header};
  const milliseconds budget = left_until(deadline);
  const auto guard = conn.session->watch(deadline);
  const error_code ec = co_await conn.session->async_handshake();
  if (ec) co_return handshake_failure(ec, ssl, url.host_header, budget);
  co_return failure{};
}

asio::awaitable<exchange_outcome> async_exchange(connection& conn, const wire_request& request,
                                                 const std::string& where, const response_limits& limits,
                                                 clock::time_point deadline) {
  const milliseconds budget = left_until(deadline);
  if (conn.session) {
    tls_transport transport(*conn.session, deadline);
    co_return co_await async_exchange_on(transport, request, where, limits, budget);
  }
  plain_transport transport(conn.tcp(), deadline);
  co_return co_await async_exchange_on(transport, request, where, limits, budget);
}

// One recv with MSG_DONTWAIT: toggling the socket's non-blocking mode around
// a peek cost three ioctl calls per request (and Asio's next operation set it
// again), half the system calls of a pooled webhook request.
bool peer_has_closed(connection& conn) {
  auto& socket = conn.tcp().socket();
  if (!socket.is_open()) return true;
  char byte = 0;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // data waiting (say a TLS close_notify): left to the resend-once rule
  if (n == 0) return true;  // EOF: the server closed it
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

void retire(const asio::any_io_executor& ex, connection_ptr conn, milliseconds timeout) {
  if (!conn->session) return;  // closing the socket is all plain HTTP needs
  asio::co_spawn(ex, async_retire(std::move(conn), timeout), asio::detached);
}

}  // namespace outbox::providers::detail

#include "providers/https_client.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace outbox::providers {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint32_t header_limit = 64 * 1024;
constexpr std::string_view user_agent = "outbox-dispatcher/0.1";

[[nodiscard]] char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

[[nodiscard]] std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

[[nodiscard]] bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

[[nodiscard]] bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

[[nodiscard]] std::string ms_text(milliseconds d) { return std::to_string(d.count()) + " ms"; }

// ---------------------------------------------------------------------------
// URL and request building (pure).

struct target_url {
  bool tls = true;
  std::string host;  // lower-cased, IPv6 without brackets
  bool host_is_ip = false;
  std::uint16_t port = 443;
  std::string target;       // path and query, starts with '/'
  std::string host_header;  // host[:port], the form used in messages too
  std::string origin;       // pool key
};

struct parsed_url {
  std::optional<target_url> url;
  std::string error;
};

[[nodiscard]] parsed_url url_error(std::string text) { return {std::nullopt, std::move(text)}; }

[[nodiscard]] bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// Error texts never repeat the URL: query strings may carry access tokens.
[[nodiscard]] parsed_url parse_url(std::string_view url) {
  if (std::any_of(url.begin(), url.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }))
    return url_error("URL contains spaces or control characters");
  target_url out;
  if (istarts_with(url, "https://")) {
    url.remove_prefix(8);
  } else if (istarts_with(url, "http://")) {
    out.tls = false;
    out.port = 80;
    url.remove_prefix(7);
  } else {
    return url_error("URL must start with https:// or http://");
  }

  const auto authority_end = url.find_first_of("/?#");
  const std::string_view authority = url.substr(0, authority_end);
  std::string_view rest = authority_end == std::string_view::npos ? std::string_view{} : url.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) return url_error("credentials in the URL are not supported");

  std::string_view host;
  std::optional<std::string_view> port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return url_error("unterminated IPv6 literal in URL");
    host = authority.substr(1, close - 1);
    const auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return url_error("unexpected text after IPv6 literal in URL");
      port_text = after.substr(1);
    }
    error_code ec;
    (void)asio::ip::make_address_v6(std::string(host), ec);
    if (ec) return url_error("invalid IPv6 literal in URL");
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (!std::all_of(host.begin(), host.end(), is_host_char)) return url_error("invalid host name in URL");
  }
  if (host.empty()) return url_error("URL has no host");

  if (port_text) {
    unsigned value = 0;
    const auto* end = port_text->data() + port_text->size();
    const auto [ptr, ec] = std::from_chars(port_text->data(), end, value);
    if (port_text->empty() || ec != std::errc{} || ptr != end || value == 0 || value > 65535)
      return url_error("invalid port in URL");
    out.port = static_cast<std::uint16_t>(value);
  }

  out.host = lowered(host);
  error_code ip_ec;
  const auto address = asio::ip::make_address(out.host, ip_ec);
  out.host_is_ip = !ip_ec;

  rest = rest.substr(0, rest.find('#'));
  out.target = (rest.empty() || rest.front() == '?') ? "/" + std::string(rest) : std::string(rest);

  out.host_header = (out.host_is_ip && address.is_v6()) ? "[" + out.host + "]" : out.host;
  if (out.port != (out.tls ? 443 : 80)) out.host_header += ":" + std::to_string(out.port);
  out.origin = std::string(out.tls ? "https://" : "http://") + out.host_header;
  return {std::move(out), {}};
}

[[nodiscard]] bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

[[nodiscard]] bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char); }

// CR, LF or NUL in a value would let a caller inject headers.
[[nodiscard]] bool is_field_value(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

using request_message = http::request<http::string_body>;

// Returns an error text when the request cannot be sent as given.
[[nodiscard]] std::optional<std::string> build_message(const http_request& req, const target_url& url,
                                                       request_message& msg) {
  if (!is_token(req.method)) return "invalid HTTP method";
  msg.method_string(req.method);
  msg.target(url.target);
  msg.version(11);
  for (const auto& [name, value] : req.headers) {
    if (!is_token(name)) return "invalid header name";
    if (!is_field_value(value)) return "invalid value for header '" + name + "'";
    // Framing and routing are ours to set; a stale value here would corrupt the exchange.
    if (iequals(name, "host") || iequals(name, "content-length") || iequals(name, "transfer-encoding")) continue;
    msg.insert(name, value);
  }
  msg.set(http::field::host, url.host_header);
  if (msg.find(http::field::user_agent) == msg.end()) msg.set(http::field::user_agent, user_agent);
  if (!req.body.empty() && msg.find(http::field::content_type) == msg.end())
    msg.set(http::field::content_type, "application/json");
  msg.body() = req.body;
  msg.prepare_payload();
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Connections and failures.

struct connection {
  connection(const asio::any_io_executor& ex, ssl::context& ctx, bool use_tls) : stream(ex, ctx), tls(use_tls) {}

  // Plain http:// connections use only the lowest layer of this stream.
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;  // lives as long as the connection, as Beast requires
  bool tls;
  clock::time_point idle_since{};

  [[nodiscard]] beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream); }
};
using connection_ptr = std::unique_ptr<connection>;

struct failure {
  transport_error kind = transport_error::none;
  std::string message;
};

struct resolved {
  std::vector<tcp::endpoint> endpoints;  // empty on failure
  failure error;
};

struct opened {
  connection_ptr conn;  // null on failure
  failure error;
};

struct exchange_outcome {
  std::optional<http_response> response;  // set when a complete response was read
  failure error;
  bool keep_alive = false;
  bool wrote_bytes = false;
  // The peer closed or reset before sending a single response byte: on a
  // reused connection this is the stale keep-alive race, safe to resend once.
  bool closed_before_response = false;
};

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
                                   std::size_t max_body) {
  if (ec == beast::error::timeout)
    return {transport_error::timeout, "no complete response from " + where + " within " + ms_text(timeout)};
  if (ec == http::error::body_limit)
    return {transport_error::response_too_large,
            "response body from " + where + " exceeds " + std::to_string(max_body) + " bytes"};
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
    return {transport_error::response_too_large,
            "response header from " + where + " exceeds " + std::to_string(header_limit) + " bytes"};
  if (is_peer_closed(ec) || ec == http::error::partial_message)
    return {transport_error::connection_reset,
            where + " closed the connection before a complete response (" + ec.message() + ")"};
  if (ec.category() == http::make_error_code(http::error::bad_version).category())
    return {transport_error::bad_response, "invalid HTTP response from " + where + ": " + ec.message()};
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

// Asio's host-name check only answers yes or no; record why it said no so the
// handshake error names the mismatch instead of "unspecified".
class verify_host_name {
 public:
  verify_host_name(std::string host, bool is_ip) : check_(std::move(host)), is_ip_(is_ip) {}

  bool operator()(bool preverified, ssl::verify_context& ctx) const {
    if (!preverified) return false;
    if (check_(preverified, ctx)) return true;
    X509_STORE_CTX_set_error(ctx.native_handle(),
                             is_ip_ ? X509_V_ERR_IP_ADDRESS_MISMATCH : X509_V_ERR_HOSTNAME_MISMATCH);
    return false;
  }

 private:
  ssl::host_name_verification check_;
  bool is_ip_;
};

// A pooled connection the server already closed shows EOF to a non-blocking
// peek; skip it rather than write into a dead socket. Waiting data (say a TLS
// close_notify) is left alone: the resend-once rule covers that case.
[[nodiscard]] bool peer_has_closed(connection& conn) {
  auto& socket = conn.tcp().socket();
  error_code ec;
  socket.non_blocking(true, ec);
  if (ec) return true;
  char byte = 0;
  (void)socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
  error_code ignored;
  socket.non_blocking(false, ignored);
  return ec && ec != asio::error::would_block;
}

// Says goodbye politely (TLS close_notify) without holding up the caller.
asio::awaitable<void> async_retire(connection_ptr conn, milliseconds timeout) {
  conn->tcp().expires_after(timeout);
  auto [ec] = co_await conn->stream.async_shutdown(use_tuple);
  (void)ec;  // stream_truncated or eof are normal: the server may close first
}

}  // namespace

// ---------------------------------------------------------------------------

struct https_client::impl {
  impl(asio::any_io_executor ex, https_client_options opts);

  asio::awaitable<http_result> async_send(http_request req);
  asio::awaitable<resolved> async_resolve(const target_url& url, clock::time_point deadline);
  asio::awaitable<opened> async_open(const target_url& url);
  template <class Stream>
  asio::awaitable<exchange_outcome> async_exchange(Stream& stream, connection& conn, const request_message& msg,
                                                   const std::string& where);

  [[nodiscard]] connection_ptr take_idle(const std::string& origin);
  void give_back(const std::string& origin, connection_ptr conn);
  void retire(connection_ptr conn);
  void prune(clock::time_point now);

  asio::any_io_executor ex_;
  https_client_options opts_;
  ssl::context ctx_{ssl::context::tls_client};
  // Per origin, oldest first; only touched on the executor's thread.
  std::unordered_map<std::string, std::vector<connection_ptr>> idle_;
};

https_client::impl::impl(asio::any_io_executor ex, https_client_options opts)
    : ex_(std::move(ex)), opts_(std::move(opts)) {
  error_code ec;
  ctx_.set_default_verify_paths(ec);
  if (ec) throw std::runtime_error("https_client: cannot use the system trust store: " + ec.message());
  if (!opts_.extra_ca_file.empty()) {
    ctx_.load_verify_file(opts_.extra_ca_file, ec);
    if (ec)
      throw std::runtime_error("https_client: cannot load extra CA file '" + opts_.extra_ca_file +
                               "': " + ec.message());
  }
  if (SSL_CTX_set_min_proto_version(ctx_.native_handle(), TLS1_2_VERSION) != 1)
    throw std::runtime_error("https_client: cannot require TLS 1.2");
  ctx_.set_verify_mode(ssl::verify_peer);
}

asio::awaitable<http_result> https_client::impl::async_send(http_request req) {
  const auto started = clock::now();
  http_result result;
  const auto finish = [&] {
    result.duration = std::chrono::duration_cast<milliseconds>(clock::now() - started);
    return std::move(result);
  };
  const auto fail = [&](failure f) {
    result.error = f.kind;
    result.error_message = std::move(f.message);
    return finish();
  };

  auto parsed = parse_url(req.url);
  if (!parsed.url) co_return fail({transport_error::bad_url, std::move(parsed.error)});
  const target_url& url = *parsed.url;
  request_message msg;
  if (auto problem = build_message(req, url, msg)) co_return fail({transport_error::bad_url, std::move(*problem)});

  for (int attempt = 1;; ++attempt) {
    connection_ptr conn = attempt == 1 ? take_idle(url.origin) : nullptr;
    const bool reused = conn != nullptr;
    if (!conn) {
      opened fresh = co_await async_open(url);
      if (!fresh.conn) co_return fail(std::move(fresh.error));
      conn = std::move(fresh.conn);
    }

    exchange_outcome out;
    if (conn->tls) {
      out = co_await async_exchange(conn->stream, *conn, msg, url.host_header);
    } else {
      out = co_await async_exchange(conn->tcp(), *conn, msg, url.host_header);
    }
    result.maybe_delivered = result.maybe_delivered || out.wrote_bytes;

    if (out.response) {
      if (out.keep_alive) {
        give_back(url.origin, std::move(conn));
      } else {
        retire(std::move(conn));
      }
      result.response = std::move(out.response);
      co_return finish();
    }
    // The server may close a kept-alive connection just as we reuse it. Resending
    // is fine only when no response byte arrived; anything else is reported.
    if (reused && attempt == 1 && out.closed_before_response) continue;
    co_return fail(std::move(out.error));
  }
}

asio::awaitable<resolved> https_client::impl::async_resolve(const target_url& url, clock::time_point deadline) {
  resolved out;
  if (url.host_is_ip) {
    out.endpoints.emplace_back(asio::ip::make_address(url.host), url.port);
    co_return out;
  }

  // Resolver operations ignore per-operation cancellation, so a timer cancels
  // the resolver itself; the weak_ptr stops a late timer from touching it.
  auto resolver = std::make_shared<tcp::resolver>(ex_);
  asio::steady_timer timer{ex_, deadline};
  timer.async_wait([weak = std::weak_ptr<tcp::resolver>(resolver)](const error_code& ec) {
    if (auto r = weak.lock(); r && !ec) r->cancel();
  });
  auto [ec, results] = co_await resolver->async_resolve(url.host, std::to_string(url.port), use_tuple);
  timer.cancel();
  if (ec == asio::error::operation_aborted) {
    out.error = {transport_error::timeout,
                 "DNS lookup of " + url.host + " timed out after " + ms_text(opts_.connect_timeout)};
  } else if (ec || results.empty()) {
    out.error = {transport_error::resolve, "cannot resolve " + url.host + ": " + (ec ? ec.message() : "no addresses")};
  } else {
    for (const auto& entry : results) out.endpoints.push_back(entry.endpoint());
  }
  co_return out;
}

asio::awaitable<opened> https_client::impl::async_open(const target_url& url) {
  const auto& where = url.host_header;
  const auto deadline = clock::now() + opts_.connect_timeout;  // lookup and connect share one budget
  opened out;
  resolved lookup = co_await async_resolve(url, deadline);
  if (lookup.endpoints.empty()) {
    out.error = std::move(lookup.error);
    co_return out;
  }

  auto conn = std::make_unique<connection>(ex_, ctx_, url.tls);
  conn->tcp().expires_at(deadline);
  auto [connect_ec, endpoint] = co_await conn->tcp().async_connect(lookup.endpoints, use_tuple);
  (void)endpoint;
  if (connect_ec == beast::error::timeout) {
    out.error = {transport_error::timeout,
                 "connecting to " + where + " timed out after " + ms_text(opts_.connect_timeout)};
    co_return out;
  }
  if (connect_ec) {
    out.error = {transport_error::connect, "cannot connect to " + where + ": " + connect_ec.message()};
    co_return out;
  }
  error_code ignored;
  conn->tcp().socket().set_option(tcp::no_delay(true), ignored);  // small request/response exchanges

  if (url.tls) {
    SSL* ssl = conn->stream.native_handle();
    // SNI is for names only (RFC 6066); IP literals are still verified below.
    if (!url.host_is_ip && SSL_set_tlsext_host_name(ssl, url.host.c_str()) != 1) {
      out.error = {transport_error::tls_handshake, "cannot set TLS server name for " + where};
      co_return out;
    }
    conn->stream.set_verify_mode(ssl::verify_peer);
    conn->stream.set_verify_callback(verify_host_name{url.host, url.host_is_ip});
    conn->tcp().expires_after(opts_.handshake_timeout);
    auto [handshake_ec] = co_await conn->stream.async_handshake(ssl::stream_base::client, use_tuple);
    if (handshake_ec) {
      out.error = handshake_failure(handshake_ec, ssl, where, opts_.handshake_timeout);
      co_return out;
    }
  }
  out.conn = std::move(conn);
  co_return out;
}

template <class Stream>
asio::awaitable<exchange_outcome> https_client::impl::async_exchange(Stream& stream, connection& conn,
                                                                     const request_message& msg,
                                                                     const std::string& where) {
  exchange_outcome out;
  conn.tcp().expires_after(opts_.request_timeout);  // one deadline for write and read together

  auto [write_ec, written] = co_await http::async_write(stream, msg, use_tuple);
  out.wrote_bytes = written > 0;
  if (write_ec) {
    out.error = write_failure(write_ec, where, opts_.request_timeout);
    out.closed_before_response = write_ec != beast::error::timeout;
    co_return out;
  }

  http::response_parser<http::string_body> parser;
  parser.header_limit(header_limit);
  parser.body_limit(opts_.max_response_bytes);
  if (msg.method() == http::verb::head) parser.skip(true);
  auto [read_ec, read] = co_await http::async_read(stream, conn.buffer, parser, use_tuple);
  (void)read;
  if (read_ec) {
    const bool got_bytes = parser.got_some() || conn.buffer.size() > 0;
    out.error = read_failure(read_ec, where, opts_.request_timeout, opts_.max_response_bytes);
    out.closed_before_response = !got_bytes && is_peer_closed(read_ec);
    co_return out;
  }

  auto& res = parser.get();
  http_response response;
  response.status = static_cast<int>(res.result_int());
  for (const auto& field : res) response.headers.emplace_back(lowered(field.name_string()), std::string(field.value()));
  response.body = std::move(res.body());
  // Bytes beyond the response mean the server is out of step: do not reuse.
  out.keep_alive = res.keep_alive() && conn.buffer.size() == 0;
  out.response = std::move(response);
  co_return out;
}

connection_ptr https_client::impl::take_idle(const std::string& origin) {
  prune(clock::now());
  const auto it = idle_.find(origin);
  if (it == idle_.end()) return nullptr;
  auto& pool = it->second;
  connection_ptr found;
  while (!found && !pool.empty()) {
    found = std::move(pool.back());  // the most recently used is the least likely to be stale
    pool.pop_back();
    if (peer_has_closed(*found)) found.reset();
  }
  if (pool.empty()) idle_.erase(it);
  return found;
}

void https_client::impl::give_back(const std::string& origin, connection_ptr conn) {
  const auto now = clock::now();
  prune(now);
  if (opts_.idle_timeout <= milliseconds::zero() || opts_.max_idle_per_origin == 0) return;
  conn->tcp().expires_never();
  conn->idle_since = now;
  auto& pool = idle_[origin];
  if (pool.size() >= opts_.max_idle_per_origin) pool.erase(pool.begin());  // drop the oldest
  pool.push_back(std::move(conn));
}

void https_client::impl::retire(connection_ptr conn) {
  if (!conn->tls) return;  // closing the socket is all plain HTTP needs
  asio::co_spawn(ex_, async_retire(std::move(conn), opts_.handshake_timeout), asio::detached);
}

void https_client::impl::prune(clock::time_point now) {
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& pool = it->second;
    std::erase_if(pool, [&](const connection_ptr& c) { return now - c->idle_since >= opts_.idle_timeout; });
    it = pool.empty() ? idle_.erase(it) : std::next(it);
  }
}

// ---------------------------------------------------------------------------

https_client::https_client(asio::any_io_executor ex, https_client_options opts)
    : impl_(std::make_unique<impl>(std::move(ex), std::move(opts))) {}

https_client::~https_client() = default;

asio::awaitable<http_result> https_client::async_send(http_request req) { return impl_->async_send(std::move(req)); }

std::size_t https_client::idle_connections() const {
  std::size_t n = 0;
  for (const auto& [origin, pool] : impl_->idle_) n += pool.size();
  return n;
}

void https_client::close_idle() { impl_->idle_.clear(); }

}  // namespace outbox::providers

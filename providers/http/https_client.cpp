#include "providers/http/https_client.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <openssl/ssl.h>
#include <boost/asio/ssl.hpp>

#include "providers/http/http_request_builder.hpp"
#include "providers/http/http_response_reader.hpp"
#include "providers/http/https_connection.hpp"
#include "providers/http/https_pool.hpp"
#include "providers/http/https_resolver.hpp"
#include "providers/http/system_trust.hpp"

// The parts, one job per file: http_request_builder (URL and message),
// https_resolver (lookups off the loop), https_connection (connect, handshake,
// exchange), http_response_reader (parsing with caps), https_pool (keep-alive).
// This file only sequences them for one async_send under one deadline.

namespace outbox::providers {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using boost::system::error_code;
using detail::clock;
using detail::connection_ptr;
using detail::failure;
using std::chrono::milliseconds;

struct addresses_or_failure {
  std::vector<asio::ip::address> addresses;  // empty on failure
  failure error;
};

[[nodiscard]] response_limits limits_from(const https_client_options& opts) {
  response_limits limits;
  limits.max_body_bytes = opts.max_response_bytes;
  return limits;
}

}  // namespace

struct https_client::impl {
  impl(asio::any_io_executor ex, https_client_options opts);

  asio::awaitable<http_result> async_send(http_request req);
  asio::awaitable<detail::exchange_outcome> async_attempt(connection_ptr& conn, const detail::target_url& url,
                                                          const detail::wire_request& request,
                                                          clock::time_point deadline);
  // The last URL parsed: a destination sends every request to the same one,
  // and parsing it (five strings, an address parse) was 1 - 2 % of a webhook
  // request's CPU. Shared, so a coroutine keeps its copy across a suspension
  // while another one replaces the cache.
  std::shared_ptr<const detail::target_url> target_for(const std::string& url, std::string& error);
  asio::awaitable<addresses_or_failure> async_addresses(const detail::target_url& url, clock::time_point deadline,
                                                        milliseconds budget);
  asio::awaitable<detail::opened> async_open(const detail::target_url& url, clock::time_point deadline);

  asio::any_io_executor ex_;
  https_client_options opts_;
  response_limits limits_;
  ssl::context ctx_{ssl::context::tls_client};
  detail::connection_pool pool_;
  detail::name_lookups lookups_;
  std::string last_url_;
  std::shared_ptr<const detail::target_url> last_target_;
};

https_client::impl::impl(asio::any_io_executor ex, https_client_options opts)
    : ex_(std::move(ex)),
      opts_(std::move(opts)),
      limits_(limits_from(opts_)),
      pool_(opts_.idle_timeout, opts_.max_idle_per_origin, opts_.check_idle_after),
      lookups_(ex_, opts_.resolver) {
  try {
    use_system_trust(ctx_.native_handle());
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string{"https_client: cannot use the system trust store: "} + e.what());
  }
  error_code ec;
  if (!opts_.extra_ca_file.empty()) {
    ctx_.load_verify_file(opts_.extra_ca_file, ec);
    if (ec)
      throw std::runtime_error("https_client: cannot load extra CA file '" + opts_.extra_ca_file +
                               "': " + ec.message());
  }
  if (SSL_CTX_set_min_proto_version(ctx_.native_handle(), TLS1_2_VERSION) != 1)
    throw std::runtime_error("https_client: cannot require TLS 1.2");
  ctx_.set_verify_mode(ssl::verify_peer);
  // OpenSSL keeps a 16 kB read and a 16 kB write buffer per connection for its
  // whole life; released, a connection waiting for its answer or idle in the
  // pool holds neither (about 1.6 MB at CONCURRENCY 50, issue 29).
  SSL_CTX_set_mode(ctx_.native_handle(), SSL_MODE_RELEASE_BUFFERS);
}

asio::awaitable<http_result> https_client::impl::async_send(http_request req) {
  const auto started = clock::now();
  const auto deadline = started + opts_.worst_case_attempt();  // caps every step below
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

  std::string url_error;
  const std::shared_ptr<const detail::target_url> target = target_for(req.url, url_error);
  if (!target) co_return fail({transport_error::bad_url, std::move(url_error)});
  const detail::target_url& url = *target;
  detail::wire_request wire;
  if (auto problem = detail::build_wire(req, url, wire))
    co_return fail({transport_error::bad_url, std::move(*problem)});
  req.body.clear();
  req.body.shrink_to_fit();  // the bytes are in `wire` now

  connection_ptr conn = pool_.take(url.origin);
  const bool reused = conn != nullptr;
  detail::exchange_outcome out = co_await async_attempt(conn, url, wire, deadline);
  // The server may close a kept-alive connection just as we reuse it.
  // Resending is fine only when no response byte arrived; anything else is reported.
  // A 408 on a reused connection is the one a server may send an idle
  // connection before closing it (RFC 9112 9.6), waiting there before our
  // request was read: not the answer to it, and nothing was processed.
  const bool stale_408 = reused && out.response && out.response->status == 408;
  if (reused && (out.closed_before_response || stale_408)) {
    const bool first_wrote_all = out.wrote_all && !stale_408;
    result.maybe_delivered = out.wrote_bytes && !stale_408;
    result.first_try_duration = std::chrono::duration_cast<milliseconds>(clock::now() - started);
    conn.reset();
    out = co_await async_attempt(conn, url, wire, deadline);
    result.resent_on_fresh_connection = first_wrote_all && out.wrote_bytes;
  }
  result.maybe_delivered = result.maybe_delivered || out.wrote_bytes;
  if (!out.response) co_return fail(std::move(out.error));

  if (out.keep_alive) {
    pool_.give_back(url.origin, std::move(conn));
  } else {
    detail::retire(ex_, std::move(conn), opts_.handshake_timeout);
  }
  result.response = std::move(out.response);
  co_return finish();
}

std::shared_ptr<const detail::target_url> https_client::impl::target_for(const std::string& url, std::string& error) {
  if (last_target_ && url == last_url_) return last_target_;
  auto parsed = detail::parse_url(url);
  if (!parsed.url) {
    error = std::move(parsed.error);
    return nullptr;
  }
  last_url_ = url;
  last_target_ = std::make_shared<const detail::target_url>(std::move(*parsed.url));
  return last_target_;
}

// One exchange, on `conn` or, when it is null, on a connection opened now.
asio::awaitable<detail::exchange_outcome> https_client::impl::async_attempt(connection_ptr& conn,
                                                                            const detail::target_url& url,
                                                                            const detail::wire_request& wire,
                                                                            clock::time_point deadline) {
  if (!conn) {
    detail::opened fresh = co_await async_open(url, deadline);
    if (!fresh.conn) {
      detail::exchange_outcome out;
      out.error = std::move(fresh.error);
      co_return out;
    }
    conn = std::move(fresh.conn);
  }
  const auto exchange_deadline = std::min(clock::now() + opts_.request_timeout, deadline);
  co_return co_await detail::async_exchange(*conn, wire, url.host_header, limits_, exchange_deadline);
}

asio::awaitable<addresses_or_failure> https_client::impl::async_addresses(const detail::target_url& url,
                                                                          clock::time_point deadline,
                                                                          milliseconds budget) {
  addresses_or_failure out;
  if (url.host_is_ip) {
    out.addresses.push_back(asio::ip::make_address(url.host));
    co_return out;
  }
  std::optional<name_lookup_result> answer = co_await lookups_.async_lookup(url.host, deadline);
  if (!answer) {
    out.error = {transport_error::timeout, "DNS lookup of " + url.host + " timed out after " + detail::ms_text(budget)};
  } else if (answer->addresses.empty()) {
    const std::string why = answer->error.empty() ? std::string{"no addresses"} : answer->error;
    out.error = {transport_error::resolve, "cannot resolve " + url.host + ": " + why};
  } else {
    out.addresses = std::move(answer->addresses);
  }
  co_return out;
}

asio::awaitable<detail::opened> https_client::impl::async_open(const detail::target_url& url,
                                                               clock::time_point deadline) {
  // Lookup and connect share one budget.
  const auto now = clock::now();
  const auto connect_deadline = std::min(now + opts_.connect_timeout, deadline);
  const auto budget = std::chrono::ceil<milliseconds>(connect_deadline - now);
  addresses_or_failure lookup = co_await async_addresses(url, connect_deadline, budget);
  if (lookup.addresses.empty()) co_return detail::opened{nullptr, std::move(lookup.error)};

  detail::opened out = co_await detail::async_connect(ex_, url, std::move(lookup.addresses), connect_deadline, budget);
  if (!out.conn || !url.tls) co_return out;
  const auto handshake_deadline = std::min(clock::now() + opts_.handshake_timeout, deadline);
  if (failure f = co_await detail::async_handshake(*out.conn, ctx_, url, handshake_deadline);
      f.kind != transport_error::none)
    co_return detail::opened{nullptr, std::move(f)};
  co_return out;
}

// ---------------------------------------------------------------------------

https_client::https_client(asio::any_io_executor ex, https_client_options opts)
    : impl_(std::make_unique<impl>(std::move(ex), std::move(opts))) {}

https_client::~https_client() = default;

asio::awaitable<http_result> https_client::async_send(http_request req) { return impl_->async_send(std::move(req)); }

std::size_t https_client::idle_connections() const { return impl_->pool_.size(); }

void https_client::close_idle() { impl_->pool_.clear(); }

}  // namespace outbox::providers

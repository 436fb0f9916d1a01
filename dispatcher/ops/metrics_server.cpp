#include "dispatcher/ops/metrics_server.hpp"

#include <algorithm>
#include <array>
#include <list>
#include <optional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "dispatcher/engine/use_tuple.hpp"
#include "dispatcher/ops/status_page.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

tcp::endpoint parse_endpoint(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("metrics address '" + address + "' is not host:port");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(host.empty() ? "0.0.0.0" : (host == "localhost" ? "127.0.0.1" : host), ec);
  if (ec) throw std::runtime_error("metrics address '" + address + "': host must be an IP address or localhost");
  int port = -1;
  try {
    port = std::stoi(address.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) throw std::runtime_error("metrics address '" + address + "': bad port");
  return {ip, static_cast<unsigned short>(port)};
}

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

// One open connection. Registered when accepted (not when its coroutine first
// runs), so the count is right however many connections arrive at once.
struct connection_entry {
  explicit connection_entry(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  bool waiting_for_request = true;  // may be closed to make room for a new connection
  bool closed = false;              // closed by the server; its coroutine is finishing
};

// What the connections share with the server. Owned jointly: a connection's
// coroutine may outlive the metrics_server (cli_run destroys the server before
// the io_context that holds the suspended coroutines).
struct server_state {
  server_state(asio::any_io_executor ex, metrics_server::render_fn r, metrics_server::snapshot_fn snap,
               metrics_server::ready_fn y, metrics_server_limits l)
      : render(std::move(r)), snapshot(std::move(snap)), ready(std::move(y)), limits(l), sampler(ex) {
    if (snapshot) {
      history.emplace(steady::now());
      render = [this] { return snapshot().render(); };
    }
  }

  metrics_server::render_fn render;
  metrics_server::snapshot_fn snapshot;  // empty: no /status
  metrics_server::ready_fn ready;
  metrics_server_limits limits;
  std::list<connection_entry> connections;  // oldest first; a connection's coroutine removes it
  std::optional<delivery_history> history;  // with `snapshot`: the page's "last hour"
  asio::steady_timer sampler;
  bool stopped = false;

  [[nodiscard]] std::size_t active() const {
    return static_cast<std::size_t>(
        std::count_if(connections.begin(), connections.end(), [](const connection_entry& c) { return !c.closed; }));
  }
  void close(connection_entry& c) {
    c.closed = true;
    c.stream.close();  // frees the descriptor now; the pending read ends with operation_aborted
  }
  // Makes room for one more connection; false when every slot is busy answering.
  [[nodiscard]] bool make_room() {
    if (active() < limits.max_connections) return true;
    const auto idle = std::find_if(connections.begin(), connections.end(),
                                   [](const connection_entry& c) { return !c.closed && c.waiting_for_request; });
    if (idle == connections.end()) return false;
    close(*idle);
    return true;
  }
};

void status_page(server_state& s, std::string_view target, response& res) {
  const auto m = s.snapshot();
  const auto now = steady::now();
  s.history->sample(m, now);
  res.result(http::status::ok);
  res.set(http::field::content_type, "text/html; charset=utf-8");
  // Read-only and script-free: nothing may load, run or frame it elsewhere.
  res.set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  res.set(http::field::cache_control, "no-store");
  res.body() =
      render_status_page({m, *s.history, s.ready(), std::chrono::system_clock::now(), now, parse_status_query(target)});
}

void route(server_state& s, const request& req, response& res) {
  const auto target = std::string(req.target().substr(0, req.target().find('?')));
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    res.result(http::status::method_not_allowed);
    res.body() = "GET only\n";
  } else if (target == "/metrics" && s.render) {
    res.result(http::status::ok);
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = s.render();
  } else if (target == "/status" && s.snapshot) {
    status_page(s, req.target(), res);
  } else if (target == "/healthz") {
    res.result(http::status::ok);
    res.body() = "ok\n";
  } else if (target == "/readyz") {
    const auto [ok, why] = s.ready();
    res.result(ok ? http::status::ok : http::status::service_unavailable);
    res.body() = ok ? "ready\n" : "not ready: " + why + "\n";
  } else {
    res.result(http::status::not_found);
    res.body() = s.snapshot ? "try /metrics, /status, /healthz or /readyz\n"
                 : s.render ? "try /metrics, /healthz or /readyz\n"
                            : "try /healthz or /readyz\n";
  }
}

response answer(server_state& s, const request& req) {
  response res;
  res.version(req.version());
  res.set(http::field::server, "outbox-dispatcher");
  res.keep_alive(req.keep_alive());
  route(s, req, res);
  if (res[http::field::content_type].empty()) res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.prepare_payload();  // Content-Length of the body, which HEAD announces without sending it
  return res;
}

// The answer to a request the parser refused for its size; nullopt for other errors.
std::optional<response> refusal(const boost::system::error_code& ec) {
  const bool header = ec == http::error::header_limit || ec == http::error::buffer_overflow;
  if (!header && ec != http::error::body_limit) return std::nullopt;
  response res{header ? http::status::request_header_fields_too_large : http::status::payload_too_large, 11};
  res.set(http::field::server, "outbox-dispatcher");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.keep_alive(false);
  res.body() = "request too large\n";
  res.prepare_payload();
  return res;
}

// Writes `res`; for HEAD only its header (with the Content-Length of the GET).
asio::awaitable<bool> async_send(beast::tcp_stream& stream, response& res, bool head_only,
                                 std::chrono::milliseconds timeout) {
  stream.expires_after(timeout);
  http::response_serializer<http::string_body> serializer{res};
  if (head_only) {
    auto [ec, n] = co_await http::async_write_header(stream, serializer, use_tuple);
    (void)n;
    co_return !ec;
  }
  auto [ec, n] = co_await http::async_write(stream, serializer, use_tuple);
  (void)n;
  co_return !ec;
}

// After a refusal: reads and drops what the client is still sending (a little,
// briefly), so that closing does not reset the connection before the client has
// read the refusal.
asio::awaitable<void> async_drain(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(std::chrono::seconds(1));
  std::array<char, 4096> sink{};
  for (std::size_t total = 0; total < 64 * 1024;) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), use_tuple);
    if (ec) break;
    total += n;
  }
}

asio::awaitable<void> async_serve(std::shared_ptr<server_state> s, std::list<connection_entry>::iterator self) {
  beast::tcp_stream& stream = self->stream;
  struct unregister {
    server_state& state;
    std::list<connection_entry>::iterator entry;
    ~unregister() { state.connections.erase(entry); }
  } guard{*s, self};
  beast::flat_buffer buffer{s->limits.max_request_bytes};  // the cap on what a client can make us hold
  for (;;) {
    self->waiting_for_request = true;
    stream.expires_after(s->limits.request_timeout);
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(s->limits.max_request_bytes));
    parser.body_limit(s->limits.max_request_bytes);
    auto [rec, read_bytes] = co_await http::async_read(stream, buffer, parser, use_tuple);
    (void)read_bytes;
    if (self->closed) co_return;
    self->waiting_for_request = false;
    if (rec) {
      auto res = refusal(rec);
      if (!res) break;
      if (co_await async_send(stream, *res, false, s->limits.write_timeout) && !self->closed) {
        co_await async_drain(stream);
      }
      co_return;
    }
    const request req = parser.release();
    auto res = answer(*s, req);
    const bool sent = co_await async_send(stream, res, req.method() == http::verb::head, s->limits.write_timeout);
    if (!sent || self->closed || !res.keep_alive()) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

// Samples the counters for the page's "last hour" while nobody looks at it.
asio::awaitable<void> async_sample(std::shared_ptr<server_state> s) {
  for (;;) {
    s->sampler.expires_after(delivery_history::resolution);
    auto [ec] = co_await s->sampler.async_wait(use_tuple);
    if (ec || s->stopped) co_return;
    s->history->sample(s->snapshot(), steady::now());
  }
}

}  // namespace

struct metrics_server::impl {
  impl(asio::any_io_executor ex, const std::string& address, render_fn r, snapshot_fn snap, ready_fn y,
       metrics_server_limits limits)
      : acceptor(ex), state(std::make_shared<server_state>(ex, std::move(r), std::move(snap), std::move(y), limits)) {
    state->limits.max_connections = std::max<std::size_t>(1, state->limits.max_connections);
    const auto ep = parse_endpoint(address);
    boost::system::error_code ec;
    acceptor.open(ep.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot serve metrics on " + address + ": " + ec.message());
  }

  tcp::acceptor acceptor;
  std::shared_ptr<server_state> state;
};

metrics_server::metrics_server(asio::any_io_executor ex, const std::string& address, snapshot_fn snapshot,
                               ready_fn ready, metrics_server_limits limits)
    : impl_(std::make_unique<impl>(ex, address, render_fn{}, std::move(snapshot), std::move(ready), limits)) {}

metrics_server::metrics_server(asio::any_io_executor ex, const std::string& address, render_fn render, ready_fn ready,
                               metrics_server_limits limits)
    : impl_(std::make_unique<impl>(ex, address, std::move(render), snapshot_fn{}, std::move(ready), limits)) {}

metrics_server::metrics_server(asio::any_io_executor ex, const std::string& address, probes_only_t, ready_fn ready,
                               metrics_server_limits limits)
    : impl_(std::make_unique<impl>(ex, address, render_fn{}, snapshot_fn{}, std::move(ready), limits)) {}

metrics_server::~metrics_server() = default;

std::uint16_t metrics_server::port() const { return impl_->acceptor.local_endpoint().port(); }

std::size_t metrics_server::open_connections() const { return impl_->state->active(); }

void metrics_server::stop() {
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->state->stopped = true;
  impl_->state->sampler.cancel();
  for (auto& c : impl_->state->connections) {
    if (!c.closed) impl_->state->close(c);
  }
}

asio::awaitable<void> metrics_server::async_run() {
  if (impl_->state->snapshot)
    asio::co_spawn(impl_->acceptor.get_executor(), async_sample(impl_->state), asio::detached);
  asio::steady_timer backoff(impl_->acceptor.get_executor());
  for (;;) {
    auto [ec, socket] = co_await impl_->acceptor.async_accept(use_tuple);
    if (ec == asio::error::operation_aborted || !impl_->acceptor.is_open()) break;
    if (ec) {
      // E.g. too many open files: the connection stays queued, so retrying at
      // once would spin. Keep serving, a little later.
      backoff.expires_after(std::chrono::milliseconds(100));
      (void)co_await backoff.async_wait(use_tuple);
      continue;
    }
    if (!impl_->state->make_room()) {
      boost::system::error_code ignored;
      socket.close(ignored);  // every slot is busy answering: refuse rather than queue unbounded work
      continue;
    }
    auto& connections = impl_->state->connections;
    const auto entry = connections.emplace(connections.end(), std::move(socket));
    asio::co_spawn(impl_->acceptor.get_executor(), async_serve(impl_->state, entry), asio::detached);
  }
}

}  // namespace outbox

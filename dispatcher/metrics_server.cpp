#include "dispatcher/metrics_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace outbox {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

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

}  // namespace

struct metrics_server::impl {
  impl(asio::any_io_executor ex, const std::string& address, render_fn r, ready_fn y)
      : acceptor(ex), render(std::move(r)), ready(std::move(y)) {
    const auto ep = parse_endpoint(address);
    boost::system::error_code ec;
    acceptor.open(ep.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot serve metrics on " + address + ": " + ec.message());
  }

  http::response<http::string_body> answer(const http::request<http::string_body>& req) const {
    http::response<http::string_body> res;
    res.version(req.version());
    res.set(http::field::server, "outbox-dispatcher");
    res.keep_alive(req.keep_alive());
    const auto target = std::string(req.target().substr(0, req.target().find('?')));
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      res.result(http::status::method_not_allowed);
      res.body() = "GET only\n";
    } else if (target == "/metrics") {
      res.result(http::status::ok);
      res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res.body() = render();
    } else if (target == "/healthz") {
      res.result(http::status::ok);
      res.body() = "ok\n";
    } else if (target == "/readyz") {
      const auto [ok, why] = ready();
      res.result(ok ? http::status::ok : http::status::service_unavailable);
      res.body() = ok ? "ready\n" : "not ready: " + why + "\n";
    } else {
      res.result(http::status::not_found);
      res.body() = "try /metrics, /healthz or /readyz\n";
    }
    if (!res.has_content_length()) res.set(http::field::content_type, res[http::field::content_type].empty()
                                                                           ? "text/plain; charset=utf-8"
                                                                           : res[http::field::content_type]);
    res.prepare_payload();
    return res;
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      stream.expires_after(std::chrono::seconds(10));
      http::request<http::string_body> req;
      auto [rec, read_bytes] = co_await http::async_read(stream, buffer, req, use_tuple);
      (void)read_bytes;
      if (rec) break;
      auto res = answer(req);
      auto [wec, n] = co_await http::async_write(stream, res, use_tuple);
      (void)n;
      if (wec || !res.keep_alive()) break;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  tcp::acceptor acceptor;
  render_fn render;
  ready_fn ready;
};

metrics_server::metrics_server(asio::any_io_executor ex, const std::string& address, render_fn render,
                               ready_fn ready)
    : impl_(std::make_unique<impl>(ex, address, std::move(render), std::move(ready))) {}

metrics_server::~metrics_server() = default;

std::uint16_t metrics_server::port() const { return impl_->acceptor.local_endpoint().port(); }

void metrics_server::stop() {
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
}

asio::awaitable<void> metrics_server::async_run() {
  for (;;) {
    auto [ec, socket] = co_await impl_->acceptor.async_accept(use_tuple);
    if (ec == asio::error::operation_aborted || !impl_->acceptor.is_open()) break;
    if (ec) continue;  // e.g. too many open files: keep serving
    asio::co_spawn(impl_->acceptor.get_executor(), impl_->serve(std::move(socket)), asio::detached);
  }
}

}  // namespace outbox

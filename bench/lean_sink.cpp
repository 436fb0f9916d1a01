#include "bench/lean_sink.hpp"

#include <algorithm>
#include <array>
#include <mutex>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace outbox::bench {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view response =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? x - 'A' + 'a' : x) == (y >= 'A' && y <= 'Z' ? y - 'A' + 'a' : y);
         });
}

// HTTP/1.1 200 with a JSON body.
std::string json_response(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + std::string(body);
}

// The value of every "event_id" key in a Meta request body, compact JSON as the
// provider writes it. An "event_id" inside a string value is escaped (\") and
// does not match.
void scan_event_ids(std::string_view body, std::vector<std::string_view>& ids) {
  constexpr std::string_view needle = "\"event_id\":\"";
  ids.clear();
  for (auto at = body.find(needle); at != std::string_view::npos; at = body.find(needle, at)) {
    at += needle.size();
    const auto end = body.find('"', at);
    if (end == std::string_view::npos) break;
    ids.push_back(body.substr(at, end - at));
    at = end;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Scans the header block (request line included, final CRLFCRLF excluded).
void scan_headers(std::string_view block, std::size_t& content_length, std::string_view& key) {
  std::size_t pos = block.find("\r\n");
  while (pos != std::string_view::npos && pos < block.size()) {
    const std::size_t start = pos + 2;
    std::size_t end = block.find("\r\n", start);
    if (end == std::string_view::npos) end = block.size();
    const std::string_view line = block.substr(start, end - start);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = line.substr(0, colon);
      const std::string_view val = trim(line.substr(colon + 1));
      if (iequals(name, "content-length")) {
        content_length = 0;
        for (char c : val) {
          if (c < '0' || c > '9') break;
          content_length = content_length * 10 + static_cast<std::size_t>(c - '0');
        }
      } else if (iequals(name, "webhook-id")) {
        key = val;
      }
    }
    pos = end;
  }
}

}  // namespace

struct lean_sink::state {
  state() : ctx(ssl::context::tls_server) {}

  void record(const std::vector<std::string_view>& keys, steady::time_point at,
              std::chrono::system_clock::time_point wall) {
    const std::lock_guard lock{mutex};
    for (const auto key : keys) records.push_back(hit{std::string(key), at, wall});
    requests.fetch_add(1, std::memory_order_relaxed);
    count.fetch_add(keys.size(), std::memory_order_release);
  }

  ssl::context ctx;
  protocol proto = protocol::webhook;
  std::uint16_t port = 0;
  std::atomic<std::size_t> count{0};
  std::atomic<std::size_t> requests{0};
  std::atomic<std::size_t> sessions{0};
  mutable std::mutex mutex;
  std::vector<hit> records;
};

namespace {

asio::awaitable<void> async_session(std::shared_ptr<lean_sink::state> st, tcp::socket socket) {
  ssl::stream<tcp::socket> stream(std::move(socket), st->ctx);
  auto [handshake_ec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
  if (handshake_ec) co_return;
  st->sessions.fetch_add(1);
  std::string buffer;
  std::string out;
  std::vector<char> chunk(64 * 1024);
  std::vector<std::string_view> keys;
  for (;;) {
    auto [read_ec, n] = co_await stream.async_read_some(asio::buffer(chunk), use_tuple);
    if (read_ec) break;
    const auto now = steady::now();
    const auto wall = std::chrono::system_clock::now();
    buffer.append(chunk.data(), n);
    std::size_t pos = 0;
    out.clear();
    for (;;) {
      const auto header_end = buffer.find("\r\n\r\n", pos);
      if (header_end == std::string::npos) break;
      std::size_t length = 0;
      std::string_view key;
      scan_headers(std::string_view(buffer).substr(pos, header_end - pos), length, key);
      const std::size_t total = header_end + 4 + length;
      if (buffer.size() < total) break;
      if (st->proto == lean_sink::protocol::meta) {
        scan_event_ids(std::string_view(buffer).substr(header_end + 4, length), keys);
        out += json_response(R"({"events_received":)" + std::to_string(keys.size()) + R"(,"fbtrace_id":"x"})");
      } else {
        keys.assign(1, key);
        out.append(response);
      }
      st->record(keys, now, wall);
      pos = total;
    }
    buffer.erase(0, pos);
    if (!out.empty()) {
      auto [write_ec, written] = co_await asio::async_write(stream, asio::buffer(out), use_tuple);
      (void)written;
      if (write_ec) break;
    }
  }
}

asio::awaitable<void> async_accept(std::shared_ptr<lean_sink::state> st, tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
    if (ec == asio::error::connection_aborted) continue;
    if (ec) co_return;
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    asio::co_spawn(acceptor.get_executor(), async_session(st, std::move(socket)), asio::detached);
  }
}

}  // namespace

lean_sink::lean_sink(const test::certificate_pem& cert, int threads, protocol p)
    : st_(std::make_shared<state>()),
      io_(std::make_unique<asio::io_context>(std::max(1, threads))),
      acceptor_(std::make_unique<tcp::acceptor>(*io_)) {
  st_->proto = p;
  st_->ctx.use_certificate_chain(asio::buffer(cert.cert));
  st_->ctx.use_private_key(asio::buffer(cert.key), ssl::context::pem);
  const tcp::endpoint endpoint{asio::ip::make_address_v4("127.0.0.1"), 0};
  acceptor_->open(endpoint.protocol());
  acceptor_->set_option(tcp::acceptor::reuse_address(true));
  acceptor_->bind(endpoint);
  acceptor_->listen(asio::socket_base::max_listen_connections);
  st_->port = acceptor_->local_endpoint().port();
  st_->records.reserve(1 << 16);
  asio::co_spawn(*io_, async_accept(st_, *acceptor_), asio::detached);
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([io = io_.get()] { io->run(); });
}

lean_sink::~lean_sink() {
  stop();
  acceptor_.reset();
  io_.reset();  // destroys the suspended sessions (and their sockets)
}

void lean_sink::stop() {
  io_->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::uint16_t lean_sink::port() const { return st_->port; }

std::string lean_sink::url(std::string_view path) const {
  return "https://127.0.0.1:" + std::to_string(st_->port) + std::string(path);
}

std::size_t lean_sink::count() const { return st_->count.load(std::memory_order_acquire); }

std::size_t lean_sink::requests() const { return st_->requests.load(); }

std::size_t lean_sink::connections() const { return st_->sessions.load(); }

std::vector<lean_sink::hit> lean_sink::hits(std::size_t from) const {
  const std::lock_guard lock{st_->mutex};
  const auto begin = st_->records.begin() + static_cast<long>(std::min(from, st_->records.size()));
  return {begin, st_->records.end()};
}

}  // namespace outbox::bench

#include "tests/support/test_https_server.hpp"
#include "tests/support/test_https_messages.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace outbox::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using detail::async_hang;
using detail::make_response;
using detail::to_record;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint64_t request_body_limit = 16 * 1024 * 1024;

// Failures in the server are bugs in a test: surface them from run().
void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

// What stop() and close_idle_connections() need to reach inside a session.
struct live_session {
  enum class phase { handshake, idle, busy };
  beast::tcp_stream* tcp = nullptr;
  asio::steady_timer* timer = nullptr;
  phase now = phase::handshake;
  bool close_when_idle = false;
  bool idle_close_counted = false;  // pending_idle_closes was decremented for it
};

struct server_state {
  server_state(asio::any_io_executor executor, const test_server_options& opts);

  [[nodiscard]] response_plan record(recorded_request req);  // also wakes waiters
  [[nodiscard]] std::size_t request_count() const {
    const std::lock_guard lock{mutex};
    return records.size();
  }
  void stop();
  [[nodiscard]] std::size_t close_idle();
  void count_idle_close(live_session& session) {
    if (!session.close_when_idle || session.idle_close_counted) return;
    session.idle_close_counted = true;
    const std::lock_guard lock{mutex};
    --pending_idle_closes;
    idle_closed.notify_all();
  }

  // Fixed after construction.
  asio::any_io_executor ex;
  std::optional<ssl::context> tls;
  bool answer_before_body = false;
  tcp::acceptor acceptor;
  std::uint16_t port = 0;

  // Server thread only.
  std::unordered_map<std::size_t, live_session*> sessions;  // by connection number
  std::vector<asio::steady_timer*> waiters;                 // async_wait_for_requests in progress

  // Read from any thread.
  std::atomic<bool> stopped{false};
  std::atomic<std::size_t> accepted{0};
  std::atomic<std::size_t> handshakes{0};
  std::atomic<std::size_t> written{0};  // response bytes
  mutable std::mutex mutex;
  mutable std::condition_variable recorded;
  std::condition_variable idle_closed;    // a busy session marked by close_idle() closed
  std::size_t pending_idle_closes = 0;    // guarded by mutex
  std::vector<recorded_request> records;  // guarded by mutex
  std::deque<response_plan> plans;        // guarded by mutex
  responder fallback;                     // guarded by mutex
};

server_state::server_state(asio::any_io_executor executor, const test_server_options& opts)
    : ex(std::move(executor)), answer_before_body(opts.answer_before_body), acceptor(ex) {
  if (opts.certificate) {
    tls.emplace(ssl::context::tls_server);
    tls->use_certificate_chain(asio::buffer(opts.certificate->cert));
    tls->use_private_key(asio::buffer(opts.certificate->key), ssl::context::pem);
  }
  const tcp::endpoint endpoint{asio::ip::make_address_v4("127.0.0.1"), 0};
  acceptor.open(endpoint.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen();
  port = acceptor.local_endpoint().port();
}

response_plan server_state::record(recorded_request req) {
  std::optional<response_plan> plan;
  responder decide;
  {
    const std::lock_guard lock{mutex};
    records.push_back(req);
    if (!plans.empty()) {
      plan = std::move(plans.front());
      plans.pop_front();
    } else {
      decide = fallback;
    }
  }
  recorded.notify_all();
  for (auto* waiter : waiters) waiter->cancel();
  if (plan) return *plan;
  return decide ? decide(req) : response_plan::reply(200);  // outside the lock: it is test code
}

void server_state::stop() {
  stopped = true;
  error_code ignored;
  acceptor.close(ignored);
  for (auto& [number, session] : sessions) {
    session->timer->cancel();
    session->tcp->close();
  }
  for (auto* waiter : waiters) waiter->cancel();
  recorded.notify_all();
}

std::size_t server_state::close_idle() {
  std::size_t n = 0;
  for (auto& [number, session] : sessions) {
    if (session->now == live_session::phase::idle) {
      session->tcp->close();  // abrupt: no close_notify, like a server's idle timeout
      ++n;
    } else if (session->now == live_session::phase::busy && !session->close_when_idle) {
      session->close_when_idle = true;
      const std::lock_guard lock{mutex};
      ++pending_idle_closes;
      ++n;
    }
  }
  return n;
}

// Registers a session for stop() and close_idle() while it lives.
class session_registration {
 public:
  session_registration(server_state& st, std::size_t number, beast::tcp_stream& tcp, asio::steady_timer& timer)
      : st_(st), number_(number) {
    session.tcp = &tcp;
    session.timer = &timer;
    st_.sessions.emplace(number_, &session);
  }
  ~session_registration() {
    st_.count_idle_close(session);  // it ended some other way
    st_.sessions.erase(number_);
  }
  session_registration(const session_registration&) = delete;
  session_registration& operator=(const session_registration&) = delete;

  live_session session;

 private:
  server_state& st_;
  std::size_t number_;
};

// Writes the plan's raw pieces, `gap` apart, then floods. False once the client is gone.
template <class Stream>
asio::awaitable<bool> async_send_raw(server_state& st, Stream& stream, asio::steady_timer& timer,
                                     const response_plan& plan) {
  for (std::size_t i = 0; i < plan.raw_pieces.size(); ++i) {
    if (i > 0 && plan.gap > milliseconds::zero()) {
      timer.expires_after(plan.gap);
      if (auto [ec] = co_await timer.async_wait(use_tuple); ec || st.stopped) co_return false;
    }
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(plan.raw_pieces[i]), use_tuple);
    st.written += n;
    if (ec) co_return false;
  }
  for (std::size_t sent = 0; sent < plan.flood_bytes && !plan.flood_piece.empty();) {
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(plan.flood_piece), use_tuple);
    st.written += n;
    sent += n;
    if (ec) co_return false;
  }
  co_return true;
}

// Serves requests until the connection should end. Returns true when it should
// end politely (Connection: close), false when it should just be dropped.
template <class Stream>
asio::awaitable<bool> async_serve(server_state& st, Stream& stream, live_session& me, std::size_t number) {
  beast::flat_buffer buffer;
  for (;;) {
    if (me.close_when_idle) {
      me.tcp->close();  // before close_idle_connections() returns to its caller
      st.count_idle_close(me);
      co_return false;
    }
    if (st.stopped) co_return false;
    me.now = live_session::phase::idle;
    http::request_parser<http::string_body> parser;
    parser.body_limit(request_body_limit);
    error_code read_ec;
    if (st.answer_before_body) {
      std::tie(read_ec, std::ignore) = co_await http::async_read_header(stream, buffer, parser, use_tuple);
    } else {
      std::tie(read_ec, std::ignore) = co_await http::async_read(stream, buffer, parser, use_tuple);
    }
    if (read_ec) co_return false;  // the client left, or we closed the socket
    me.now = live_session::phase::busy;

    const bool client_keeps_alive = parser.get().keep_alive();
    const bool body_pending = !parser.is_done();
    const response_plan plan =
        st.record(to_record(body_pending ? http::request<http::string_body>(parser.get()) : parser.release(), number));
    if (plan.delay > milliseconds::zero()) {
      me.timer->expires_after(plan.delay);
      auto [ec] = co_await me.timer->async_wait(use_tuple);
      if (ec || st.stopped) co_return false;
    }
    switch (plan.action) {
      case response_plan::kind::hang: co_await async_hang(stream); co_return false;
      case response_plan::kind::close_without_response: co_return false;
      case response_plan::kind::close_mid_response:
      case response_plan::kind::flood: (void)co_await async_send_raw(st, stream, *me.timer, plan); co_return false;
      case response_plan::kind::raw:
        if (!co_await async_send_raw(st, stream, *me.timer, plan)) co_return false;
        if (!plan.keep_alive) co_return true;
        continue;
      case response_plan::kind::respond: break;
    }
    const auto res = make_response(plan, client_keeps_alive);
    auto [write_ec, written] = co_await http::async_write(stream, res, use_tuple);
    st.written += written;
    if (write_ec) co_return false;
    if (body_pending) {  // answered early: the body still comes, and is dropped
      auto [body_ec, body_read] = co_await http::async_read(stream, buffer, parser, use_tuple);
      (void)body_read;
      if (body_ec) co_return false;
    }
    if (!res.keep_alive()) co_return true;
  }
}

asio::awaitable<void> async_session(std::shared_ptr<server_state> st, tcp::socket socket, std::size_t number) {
  if (st->stopped) co_return;
  asio::steady_timer timer{st->ex};
  if (st->tls) {
    beast::ssl_stream<beast::tcp_stream> stream{std::move(socket), *st->tls};
    session_registration registration{*st, number, beast::get_lowest_layer(stream), timer};
    auto [handshake_ec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
    if (handshake_ec) co_return;  // e.g. the client rejected our certificate
    ++st->handshakes;
    if (co_await async_serve(*st, stream, registration.session, number)) {
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(1));
      auto [ec] = co_await stream.async_shutdown(use_tuple);
      (void)ec;  // stream_truncated is normal: the client may just close
    }
  } else {
    beast::tcp_stream stream{std::move(socket)};
    session_registration registration{*st, number, stream, timer};
    if (co_await async_serve(*st, stream, registration.session, number)) {
      error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }
}  // the stream's destructor closes the socket

asio::awaitable<void> async_accept_loop(std::shared_ptr<server_state> st) {
  while (!st->stopped) {
    auto [ec, socket] = co_await st->acceptor.async_accept(use_tuple);
    if (ec == asio::error::connection_aborted) continue;
    if (ec) co_return;  // closed by stop()
    const std::size_t number = ++st->accepted;
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // no Nagle/delayed-ACK stalls in tests
    // Loopback buffers hold megabytes: a small one makes a large upload wait
    // for the server to read, as it does across a network.
    if (st->answer_before_body) socket.set_option(asio::socket_base::receive_buffer_size(64 * 1024), ignored);
    asio::co_spawn(st->ex, async_session(st, std::move(socket), number), rethrow);
  }
}

asio::awaitable<bool> async_wait_requests(std::shared_ptr<server_state> st, std::size_t n, milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  asio::steady_timer timer{st->ex};
  st->waiters.push_back(&timer);
  struct unregister {
    server_state& st;
    asio::steady_timer* timer;
    ~unregister() { std::erase(st.waiters, timer); }
  } guard{*st, &timer};
  for (;;) {
    if (st->request_count() >= n) co_return true;
    if (st->stopped || clock::now() >= deadline) co_return false;
    timer.expires_at(deadline);
    (void)co_await timer.async_wait(use_tuple);  // cancelled on every new request
  }
}

[[nodiscard]] std::shared_ptr<server_state> start(asio::any_io_executor ex, const test_server_options& opts) {
  auto st = std::make_shared<server_state>(std::move(ex), opts);
  asio::co_spawn(st->ex, async_accept_loop(st), rethrow);
  return st;
}

}  // namespace

// ---------------------------------------------------------------------------

std::optional<std::string> recorded_request::header(std::string_view name) const {
  const std::string wanted = providers::ascii_lowercase(name);
  for (const auto& [key, value] : headers) {
    if (key == wanted) return value;
  }
  return std::nullopt;
}

response_plan response_plan::reply(int status, std::string body, providers::header_list headers) {
  response_plan p;
  p.status = status;
  p.body = std::move(body);
  p.headers = std::move(headers);
  return p;
}

response_plan response_plan::hang() { return {.action = kind::hang}; }

// Promises the whole body in Content-Length, sends half of it.
response_plan response_plan::close_mid_response(std::string body) {
  if (body.empty()) body = std::string(1024, 'x');
  response_plan p =
      raw({"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body.substr(0, body.size() / 2)});
  p.action = kind::close_mid_response;
  return p;
}

response_plan response_plan::close_without_response() { return {.action = kind::close_without_response}; }

response_plan response_plan::raw(std::vector<std::string> pieces, milliseconds gap) {
  return {.action = kind::raw, .raw_pieces = std::move(pieces), .gap = gap};
}

response_plan response_plan::flood(std::string head, std::string piece, std::size_t total_bytes) {
  response_plan p = raw({std::move(head)});
  p.action = kind::flood;
  p.flood_piece = std::move(piece);
  p.flood_bytes = total_bytes;
  return p;
}

response_plan response_plan::after(milliseconds d) const {
  response_plan p = *this;
  p.delay = d;
  return p;
}

response_plan response_plan::closing() const {
  response_plan p = *this;
  p.keep_alive = false;
  return p;
}

// ---------------------------------------------------------------------------

struct test_https_server::impl {
  // Runs `f` on the server's thread and waits for it (own-thread mode), or
  // right here (caller's executor, or once the own thread has finished).
  template <class F>
  auto on_server(F f) -> decltype(f()) {
    if (!own_io || !thread.joinable() || std::this_thread::get_id() == thread.get_id()) return f();
    // Not a packaged_task: Asio treats one as a completion token, not a handler.
    std::promise<decltype(f())> promise;
    auto result = promise.get_future();
    asio::post(*own_io, [&promise, &f] {
      if constexpr (std::is_void_v<decltype(f())>) {
        f();
        promise.set_value();
      } else {
        promise.set_value(f());
      }
    });
    return result.get();  // `promise` and `f` outlive the handler: we wait here
  }

  std::unique_ptr<asio::io_context> own_io;  // own-thread mode only
  std::shared_ptr<server_state> state;       // shared with the server's coroutines
  std::thread thread;
};

test_https_server::test_https_server(asio::any_io_executor ex, test_server_options opts)
    : impl_(std::make_unique<impl>()) {
  impl_->state = start(std::move(ex), opts);
}

test_https_server::test_https_server(test_server_options opts) : impl_(std::make_unique<impl>()) {
  impl_->own_io = std::make_unique<asio::io_context>(1);
  impl_->state = start(impl_->own_io->get_executor(), opts);
  // run() returns by itself once stop() has closed everything.
  impl_->thread = std::thread([io = impl_->own_io.get()] { io->run(); });
}

test_https_server::~test_https_server() { stop(); }

std::uint16_t test_https_server::port() const { return impl_->state->port; }

std::string test_https_server::url(std::string_view path, std::string_view host) const {
  return std::string(impl_->state->tls ? "https://" : "http://") + std::string(host) + ":" + std::to_string(port()) +
         std::string(path);
}

void test_https_server::script(std::vector<response_plan> plans) {
  const std::lock_guard lock{impl_->state->mutex};
  for (auto& plan : plans) impl_->state->plans.push_back(std::move(plan));
}

void test_https_server::set_fallback(responder fallback) {
  const std::lock_guard lock{impl_->state->mutex};
  impl_->state->fallback = std::move(fallback);
}

std::vector<recorded_request> test_https_server::requests() const {
  const std::lock_guard lock{impl_->state->mutex};
  return impl_->state->records;
}

std::size_t test_https_server::request_count() const { return impl_->state->request_count(); }

std::size_t test_https_server::accepted_connections() const { return impl_->state->accepted; }

std::size_t test_https_server::tls_handshakes() const { return impl_->state->handshakes; }

std::size_t test_https_server::bytes_written() const { return impl_->state->written; }

bool test_https_server::wait_for_requests(std::size_t n, milliseconds timeout) const {
  auto& st = *impl_->state;
  std::unique_lock lock{st.mutex};
  return st.recorded.wait_for(lock, timeout, [&] { return st.records.size() >= n; });
}

asio::awaitable<bool> test_https_server::async_wait_for_requests(std::size_t n, milliseconds timeout) const {
  auto st = impl_->state;                               // copied before the first suspension
  if (st->stopped) co_return st->request_count() >= n;  // the server's executor may no longer run
  // Waits on the server's executor, where records arrive, and resumes the caller on its own.
  co_return co_await asio::co_spawn(st->ex, async_wait_requests(st, n, timeout), asio::use_awaitable);
}

std::size_t test_https_server::close_idle_connections() {
  const std::size_t n = impl_->on_server([st = impl_->state] { return st->close_idle(); });
  if (impl_->own_io && impl_->thread.joinable() && std::this_thread::get_id() != impl_->thread.get_id()) {
    // A session still writing its response closes once done: wait for that, so the
    // caller's next request cannot reach a connection that is about to close.
    std::unique_lock lock{impl_->state->mutex};
    impl_->state->idle_closed.wait_for(lock, std::chrono::seconds(5),
                                       [&] { return impl_->state->pending_idle_closes == 0; });
  }
  return n;
}

void test_https_server::stop() {
  if (!impl_->state->stopped) impl_->on_server([st = impl_->state] { st->stop(); });
  if (impl_->thread.joinable() && std::this_thread::get_id() != impl_->thread.get_id()) impl_->thread.join();
}

}  // namespace outbox::test

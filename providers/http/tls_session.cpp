#include "providers/http/tls_session.hpp"

#include <cerrno>
#include <stdexcept>
#include <utility>

#include <openssl/err.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>

#include "providers/http/tls_socket_bio.hpp"

namespace outbox::providers::detail {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

}  // namespace

tls_session::tls_session(SSL_CTX* ctx, asio::ip::tcp::socket& socket)
    : ssl_(SSL_new(ctx)), socket_(socket), watchdog_(socket.get_executor()), watch_(std::make_shared<watch_state>()) {
  if (!ssl_) throw std::runtime_error("tls_session: SSL_new failed");
  BIO* out = new_socket_bio(socket.native_handle());
  in_ = BIO_new(BIO_s_mem());
  if (out == nullptr || in_ == nullptr) {
    BIO_free(out);
    BIO_free(in_);
    throw std::runtime_error("tls_session: cannot make the session's BIOs");
  }
  BIO_set_mem_eof_return(in_, -1);    // empty means "wait for more" until the socket ends
  SSL_set_bio(ssl_.get(), in_, out);  // the session owns both now
  // Whole records from what arrived, not a record header first and its body next.
  SSL_set_read_ahead(ssl_.get(), 1);
  // A write reports each record that went out (as Asio's stream did), so a
  // request cut off midway still counts as possibly delivered.
  SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE);
  SSL_set_connect_state(ssl_.get());
  watch_->socket = &socket_;
}

tls_session::~tls_session() { watch_->socket = nullptr; }

tls_session::deadline_guard tls_session::watch(clock::time_point deadline) {
  const std::uint64_t generation = ++watch_->generation;
  watch_->timed_out = false;
  watchdog_.expires_at(deadline);
  // The state, not `this`: a timer that already fired may run its handler
  // after the session is gone or watching another deadline.
  watchdog_.async_wait([state = watch_, generation](const error_code& ec) {
    if (ec || state->socket == nullptr || state->generation != generation) return;
    state->timed_out = true;
    error_code ignored;
    state->socket->cancel(ignored);  // the pending receive or wait ends and reports the timeout
  });
  return deadline_guard{*this};
}

void tls_session::disarm() {
  ++watch_->generation;
  watchdog_.cancel();
}

// OpenSSL's error queue must be empty before a call whose status is asked
// for, and errno must not be left from an earlier system call.
void tls_session::fresh_error_state() {
  ERR_clear_error();
  errno = 0;
}

tls_session::ssl_status tls_session::status_after(int ret) const {
  const int sys = errno;  // before any other call can change it
  return ssl_status{SSL_get_error(ssl_.get(), ret), sys};
}

error_code tls_session::error_for(ssl_status s) {
  if (s.status == SSL_ERROR_ZERO_RETURN) return asio::error::eof;  // the peer's close_notify
  const unsigned long queued = ERR_get_error();
  if (s.status == SSL_ERROR_SYSCALL && queued == 0)
    return s.sys != 0 ? error_code{s.sys, asio::error::get_system_category()}
                      : error_code{asio::ssl::error::stream_truncated};
  if (ERR_GET_REASON(queued) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return asio::ssl::error::stream_truncated;
  if (queued != 0) return {static_cast<int>(queued), asio::error::get_ssl_category()};
  return asio::error::fault;  // SSL_get_error named nothing: should not happen
}

asio::awaitable<error_code> tls_session::async_wait_writable() {
  if (watch_->timed_out) co_return boost::beast::error::timeout;
  auto [ec] = co_await socket_.async_wait(asio::socket_base::wait_write, asio::as_tuple(asio::use_awaitable));
  if (watch_->timed_out) co_return boost::beast::error::timeout;
  co_return ec;
}

asio::awaitable<error_code> tls_session::async_fill() {
  if (watch_->timed_out) co_return boost::beast::error::timeout;
  auto [ec, n] = co_await socket_.async_receive(asio::buffer(inbox_), asio::as_tuple(asio::use_awaitable));
  if (watch_->timed_out) co_return boost::beast::error::timeout;
  if (ec == asio::error::eof) {
    BIO_set_mem_eof_return(in_, 0);  // OpenSSL tells a close_notify from a cut-off stream
    co_return error_code{};
  }
  if (ec) co_return ec;
  if (BIO_write(in_, inbox_.data(), static_cast<int>(n)) != static_cast<int>(n)) co_return asio::error::no_memory;
  co_return error_code{};
}

asio::awaitable<error_code> tls_session::async_follow(ssl_status s) {
  if (s.status == SSL_ERROR_WANT_READ) co_return co_await async_fill();
  if (s.status == SSL_ERROR_WANT_WRITE) co_return co_await async_wait_writable();
  co_return error_for(s);
}

asio::awaitable<error_code> tls_session::async_handshake() {
  for (;;) {
    fresh_error_state();
    const int ret = SSL_do_handshake(ssl_.get());
    if (ret == 1) co_return error_code{};
    const ssl_status s = status_after(ret);
    if (error_code ec = co_await async_follow(s)) co_return ec;
  }
}

asio::awaitable<tls_session::io_result> tls_session::async_write(asio::const_buffer data) {
  const auto* bytes = static_cast<const char*>(data.data());
  std::size_t done = 0;
  while (done < data.size()) {
    fresh_error_state();
    std::size_t n = 0;
    // After a WANT_* the same call is repeated with the same arguments, as OpenSSL requires.
    const int ret = SSL_write_ex(ssl_.get(), bytes + done, data.size() - done, &n);
    if (ret == 1) {
      done += n;
      continue;
    }
    const ssl_status s = status_after(ret);
    if (error_code ec = co_await async_follow(s)) co_return io_result(ec, done);
  }
  co_return io_result(error_code{}, done);
}

asio::awaitable<tls_session::io_result> tls_session::async_read_some(asio::mutable_buffer room) {
  for (;;) {
    fresh_error_state();
    std::size_t n = 0;
    const int ret = SSL_read_ex(ssl_.get(), room.data(), room.size(), &n);
    if (ret == 1) co_return io_result(error_code{}, n);
    const ssl_status s = status_after(ret);
    if (error_code ec = co_await async_follow(s)) co_return io_result(ec, 0);
  }
}

asio::awaitable<error_code> tls_session::async_shutdown() {
  for (;;) {
    fresh_error_state();
    const int ret = SSL_shutdown(ssl_.get());
    if (ret >= 0) co_return error_code{};  // 0: ours is sent; the peer's is not awaited
    const ssl_status s = status_after(ret);
    if (s.status == SSL_ERROR_WANT_READ) co_return error_code{};  // ours went; only theirs is missing
    if (error_code ec = co_await async_follow(s)) co_return ec;
  }
}

}  // namespace outbox::providers::detail

#pragma once
// TLS on a connected socket without Asio's SSL stream. OpenSSL writes to the
// non-blocking socket itself (tls_socket_bio), and reads what Asio received
// into a 4 kB inbox of the session (a memory BIO). Asio's SSL stream moved
// every byte through a BIO pair and two 17 kB buffers of its own per
// connection instead (about 70 kB each, zero-filled; 3.5 MB at CONCURRENCY 50)
// and copied each byte once more each way (issue 29). Receiving through Asio
// keeps its reactor's shortcut: after a read that drained the socket, the next
// one waits for readiness without a system call that would find it empty.
//
// Every operation ends by a deadline set with watch(): a timer that cancels
// the socket's operations. Errors come back as Asio's TLS stream gives them
// (eof for a close_notify, ssl::error::stream_truncated for a missing one, the
// OpenSSL error otherwise), and beast::error::timeout past the deadline.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include <openssl/ssl.h>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace outbox::providers::detail {

class tls_session {
 public:
  using clock = std::chrono::steady_clock;
  using io_result = std::tuple<boost::system::error_code, std::size_t>;

  // Throws std::runtime_error when OpenSSL cannot make the session.
  tls_session(SSL_CTX* ctx, boost::asio::ip::tcp::socket& socket);
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  [[nodiscard]] SSL* native_handle() const { return ssl_.get(); }

  // Until the returned guard goes, operations past `deadline` end with beast::error::timeout.
  class deadline_guard {
   public:
    explicit deadline_guard(tls_session& s) : session_(&s) {}
    deadline_guard(const deadline_guard&) = delete;
    deadline_guard& operator=(const deadline_guard&) = delete;
    ~deadline_guard() { session_->disarm(); }

   private:
    tls_session* session_;
  };
  [[nodiscard]] deadline_guard watch(clock::time_point deadline);

  [[nodiscard]] boost::asio::awaitable<boost::system::error_code> async_handshake();
  // All of `data`, or an error with what went out before it.
  [[nodiscard]] boost::asio::awaitable<io_result> async_write(boost::asio::const_buffer data);
  // Some bytes into `room`.
  [[nodiscard]] boost::asio::awaitable<io_result> async_read_some(boost::asio::mutable_buffer room);
  // Sends close_notify; does not wait for the peer's.
  [[nodiscard]] boost::asio::awaitable<boost::system::error_code> async_shutdown();

 private:
  struct ssl_free {
    void operator()(SSL* s) const { SSL_free(s); }
  };
  // The watchdog's view of the session, shared with its handler.
  struct watch_state {
    boost::asio::ip::tcp::socket* socket = nullptr;  // null once the session is gone
    std::uint64_t generation = 0;                    // which watch() a firing belongs to
    bool timed_out = false;
  };
  struct ssl_status {
    int status;  // SSL_get_error()
    int sys;     // errno right after the call
  };

  static void fresh_error_state();
  [[nodiscard]] ssl_status status_after(int ret) const;
  // What a failed call asks for: bytes from the socket, room to write, or the error to report.
  [[nodiscard]] boost::asio::awaitable<boost::system::error_code> async_follow(ssl_status s);
  // Receives what the socket has into the inbox and hands it to OpenSSL.
  [[nodiscard]] boost::asio::awaitable<boost::system::error_code> async_fill();
  [[nodiscard]] boost::asio::awaitable<boost::system::error_code> async_wait_writable();
  [[nodiscard]] static boost::system::error_code error_for(ssl_status s);
  void disarm();

  std::unique_ptr<SSL, ssl_free> ssl_;
  boost::asio::ip::tcp::socket& socket_;
  boost::asio::steady_timer watchdog_;
  std::shared_ptr<watch_state> watch_;
  BIO* in_ = nullptr;  // what OpenSSL reads: the inbox's bytes (owned by ssl_)
  std::array<char, 4096> inbox_;
};

}  // namespace outbox::providers::detail

#pragma once
// One PostgreSQL connection driven by Boost.Asio: non-blocking connect and
// queries, a deadline on every operation, nothing that blocks the event loop.
// Not thread-safe; use it from one coroutine at a time (one io_context thread).
#include <chrono>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_set>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "db/error.hpp"
#include "db/params.hpp"
#include "db/pg_handles.hpp"
#include "db/result.hpp"

namespace outbox::db {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

struct notification {
  std::string channel;
  std::string payload;
  int sender_pid = 0;
};

// Session settings sent with the start-up packet (no extra round trip).
struct connect_options {
  // Shown in pg_stat_activity; used only when the conninfo names none.
  std::string application_name;
  // Server-side statement_timeout (0: the server's default). A statement whose
  // client deadline passed is closed client-side, but the server would still run
  // it to the end; this bounds it there too.
  std::chrono::milliseconds statement_timeout{0};
};

class connection {
 public:
  // Connects without blocking. `conninfo` is a libpq keyword string or URI; empty
  // means the libpq environment (PGHOST, PGDATABASE, ...). Throws db::error.
  [[nodiscard]] static asio::awaitable<connection> async_connect(asio::any_io_executor ex, std::string conninfo,
                                                                 clock::duration timeout, connect_options options);
  // No default argument on the coroutine itself: GCC 12 destroys a defaulted
  // class-type argument of a coroutine twice.
  [[nodiscard]] static asio::awaitable<connection> async_connect(asio::any_io_executor ex, std::string conninfo,
                                                                 clock::duration timeout) {
    return async_connect(std::move(ex), std::move(conninfo), timeout, connect_options{});
  }

  connection(connection&&) noexcept = default;
  connection& operator=(connection&&) noexcept;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  // Runs one parameterized statement (extended protocol). Throws db::error; on a
  // timeout or a broken connection the connection is closed (is_open() false).
  [[nodiscard]] asio::awaitable<result> async_query(std::string_view sql, params args, clock::duration timeout);
  // Like async_query, but prepares the statement once per connection under `name`
  // and reuses the plan afterwards.
  [[nodiscard]] asio::awaitable<result> async_query_prepared(std::string name, std::string_view sql, params args,
                                                             clock::duration timeout);
  // Runs a script of one or more statements without parameters (simple protocol).
  asio::awaitable<void> async_exec_script(std::string_view sql, clock::duration timeout);

  // Waits until the server sends something (e.g. a notification) or the timeout
  // passes; returns false on timeout. Throws db::error if the connection broke.
  [[nodiscard]] asio::awaitable<bool> async_wait_input(clock::duration timeout);
  // Notifications received so far (during queries or waits), oldest first.
  [[nodiscard]] std::deque<notification> take_notifications();

  [[nodiscard]] bool is_open() const noexcept { return conn_ != nullptr; }
  // Without waiting: false (and closed) when the server ended an idle
  // connection since its last use (a terminated backend, a restart), or sent
  // it anything but a notification.
  [[nodiscard]] bool still_open() noexcept;
  [[nodiscard]] int backend_pid() const noexcept;
  // Closes now: releases the socket from Asio before PQfinish closes it.
  void close() noexcept;

 private:
  connection(asio::any_io_executor ex, pgconn_ptr conn);

  enum class wait_for { read, write };
  // True when the socket is ready, false when the deadline passed first.
  asio::awaitable<bool> async_wait(wait_for what, clock::time_point deadline);
  void adopt_socket();
  asio::awaitable<void> async_flush(clock::time_point deadline);
  asio::awaitable<result> async_collect(clock::time_point deadline, std::string_view what);
  void consume_input();
  void collect_notifications();
  [[noreturn]] void fail(error_kind kind, std::string message);

  pgconn_ptr conn_;
  asio::posix::stream_descriptor socket_;
  asio::steady_timer timer_;
  int socket_fd_ = -1;
  std::unordered_set<std::string> prepared_;
  std::deque<notification> notifications_;
};

// Quotes an identifier (e.g. a channel name for LISTEN) with libpq's rules.
[[nodiscard]] std::string quote_identifier(std::string_view name);

}  // namespace outbox::db

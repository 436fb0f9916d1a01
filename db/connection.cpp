#include "db/connection.hpp"

#include <poll.h>

#include <cstdlib>
#include <string_view>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox::db {
namespace {

using namespace asio::experimental::awaitable_operators;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// libpq messages span lines ("...failed: Connection refused\n\tIs the server
// running..."); logs and CLI errors want one line.
std::string one_line(const char* message) {
  std::string out;
  bool space = false;
  for (const char* p = message; p && *p; ++p) {
    const bool ws = *p == '\n' || *p == '\r' || *p == '\t' || *p == ' ';
    if (ws) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      space = false;
      out += *p;
    }
  }
  return out.empty() ? std::string("unknown libpq error") : out;
}

// Server notices (e.g. "relation already exists, skipping") must not reach stderr.
void ignore_notice(void*, const PGresult*) {}

std::vector<const char*> c_values(const params& args) {
  std::vector<const char*> values;
  values.reserve(args.size());
  for (const auto& a : args) values.push_back(a ? a->c_str() : nullptr);
  return values;
}

}  // namespace

connection::connection(asio::any_io_executor ex, pgconn_ptr conn) : conn_(std::move(conn)), socket_(ex), timer_(ex) {}

connection& connection::operator=(connection&& other) noexcept {
  if (this != &other) {
    close();
    conn_ = std::move(other.conn_);
    socket_ = std::move(other.socket_);
    timer_ = std::move(other.timer_);
    socket_fd_ = std::exchange(other.socket_fd_, -1);
    prepared_ = std::move(other.prepared_);
    notifications_ = std::move(other.notifications_);
  }
  return *this;
}

connection::~connection() { close(); }

void connection::close() noexcept {
  // Asio must forget the fd before libpq closes it, or the reactor keeps a stale registration.
  if (socket_.is_open()) {
    socket_.release();
  }
  socket_fd_ = -1;
  conn_.reset();
  prepared_.clear();
}

bool connection::still_open() noexcept {
  if (!conn_) return false;
  pollfd fd{socket_fd_, POLLIN, 0};
  if (::poll(&fd, 1, 0) <= 0) return true;
  // Readable while idle: a notification, or the server's goodbye (a FATAL
  // message, then the end of the stream), which libpq may not have seen whole yet.
  const std::size_t before = notifications_.size();
  if (PQconsumeInput(conn_.get()) != 0 && PQstatus(conn_.get()) == CONNECTION_OK) {
    collect_notifications();
    if (notifications_.size() > before) return true;
  }
  close();
  return false;
}

int connection::backend_pid() const noexcept { return conn_ ? PQbackendPID(conn_.get()) : 0; }

void connection::fail(error_kind kind, std::string message) {
  close();
  throw error(kind, std::move(message));
}

void connection::adopt_socket() {
  // PQconnectPoll may close the socket and open another (e.g. trying the next
  // host), possibly with the same number: always re-register during connect.
  if (socket_.is_open()) socket_.release();
  socket_fd_ = PQsocket(conn_.get());
  if (socket_fd_ >= 0) socket_.assign(socket_fd_);
}

namespace {

// What the user's connection string says that our keywords must respect.
struct user_conninfo {
  // `options`, in the conninfo (`options=-csearch_path=outbox`) or else in
  // PGOPTIONS: ours are added to them, never put in their place.
  std::string options;
  // Several hosts and no target_session_attrs (nor PGTARGETSESSIONATTRS): after a
  // failover the first host that answers may be a read-only standby.
  bool wants_read_write = false;
};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

user_conninfo read_user_conninfo(const std::string& conninfo) {
  user_conninfo out;
  std::string host = env_or_empty("PGHOST");
  std::string attrs = env_or_empty("PGTARGETSESSIONATTRS");
  if (PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), nullptr)) {
    for (const PQconninfoOption* o = parsed; o->keyword != nullptr; ++o) {
      if (o->val == nullptr) continue;
      const std::string_view key{o->keyword};
      if (key == "options") out.options = o->val;
      if (key == "host" || key == "hostaddr") host = o->val;
      if (key == "target_session_attrs") attrs = o->val;
    }
    PQconninfoFree(parsed);
  }
  if (out.options.empty()) out.options = env_or_empty("PGOPTIONS");
  out.wants_read_write = host.find(',') != std::string::npos && attrs.empty();
  return out;
}

pgconn_ptr start_connect(const std::string& conninfo, const connect_options& options) {
  // dbname is expanded as the whole conninfo; the keywords after it add to it
  // (an `options` given here replaces the conninfo's: so it carries the user's too).
  const user_conninfo user = read_user_conninfo(conninfo);
  std::string session_options = user.options;
  session_options += (session_options.empty() ? "" : " ");
  session_options += "-c statement_timeout=" + std::to_string(options.statement_timeout.count());
  std::vector<const char*> keys{"dbname"}, values{conninfo.c_str()};
  if (!options.application_name.empty()) {
    keys.push_back("fallback_application_name");
    values.push_back(options.application_name.c_str());
  }
  if (options.statement_timeout.count() > 0) {
    keys.push_back("options");
    values.push_back(session_options.c_str());
  }
  if (user.wants_read_write) {
    keys.push_back("target_session_attrs");
    values.push_back("read-write");
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  pgconn_ptr raw(PQconnectStartParams(keys.data(), values.data(), 1));
  // Before anything can produce a notice: libpq's default receiver prints to stderr.
  if (raw) PQsetNoticeReceiver(raw.get(), &ignore_notice, nullptr);
  return raw;
}

}  // namespace

asio::awaitable<connection> connection::async_connect(asio::any_io_executor ex, std::string conninfo,
                                                      clock::duration timeout, connect_options options) {
  const auto deadline = clock::now() + timeout;
  pgconn_ptr raw = start_connect(conninfo, options);
  if (!raw) throw error(error_kind::connect, "cannot allocate a PostgreSQL connection");
  if (PQstatus(raw.get()) == CONNECTION_BAD) throw error(error_kind::connect, one_line(PQerrorMessage(raw.get())));

  connection c(ex, std::move(raw));
  PostgresPollingStatusType status = PGRES_POLLING_WRITING;
  for (;;) {
    c.adopt_socket();
    if (status == PGRES_POLLING_OK) break;
    if (status == PGRES_POLLING_FAILED || c.socket_fd_ < 0) {
      std::string message = one_line(PQerrorMessage(c.conn_.get()));
      c.close();
      throw error(error_kind::connect, std::move(message));
    }
    const bool ready =
        co_await c.async_wait(status == PGRES_POLLING_READING ? wait_for::read : wait_for::write, deadline);
    if (!ready) {
      c.close();
      throw error(error_kind::connect, "timed out connecting to PostgreSQL");
    }
    status = PQconnectPoll(c.conn_.get());
  }
  if (PQsetnonblocking(c.conn_.get(), 1) != 0) {
    std::string message = one_line(PQerrorMessage(c.conn_.get()));
    c.close();
    throw error(error_kind::connect, std::move(message));
  }
  co_return c;
}

asio::awaitable<bool> connection::async_wait(wait_for what, clock::time_point deadline) {
  if (!conn_) throw error(error_kind::connection, "connection is closed");
  timer_.expires_at(deadline);
  const auto type =
      what == wait_for::read ? asio::posix::stream_descriptor::wait_read : asio::posix::stream_descriptor::wait_write;
  auto outcome = co_await (socket_.async_wait(type, use_tuple) || timer_.async_wait(use_tuple));
  if (outcome.index() == 1) co_return false;
  const auto [ec] = std::get<0>(outcome);
  if (ec) fail(error_kind::connection, "socket wait failed: " + ec.message());
  co_return true;
}

void connection::consume_input() {
  if (PQconsumeInput(conn_.get()) == 0) fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
  collect_notifications();
}

void connection::collect_notifications() {
  while (pgnotify_ptr n{PQnotifies(conn_.get())}) {
    notifications_.push_back({n->relname, n->extra ? n->extra : "", n->be_pid});
  }
}

std::deque<notification> connection::take_notifications() { return std::exchange(notifications_, {}); }

asio::awaitable<void> connection::async_flush(clock::time_point deadline) {
  for (;;) {
    const int r = PQflush(conn_.get());
    if (r == 0) co_return;
    if (r < 0) fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
    // The send buffer is full. Waiting for writability is enough for our small
    // statements; read input meanwhile so the server never blocks on us.
    const bool writable = co_await async_wait(wait_for::write, deadline);
    if (!writable) fail(error_kind::timeout, "timed out sending a statement");
    consume_input();
  }
}

asio::awaitable<result> connection::async_collect(clock::time_point deadline, std::string_view what) {
  result last;
  std::string message;
  std::string sqlstate;
  for (;;) {
    while (PQisBusy(conn_.get())) {
      const bool readable = co_await async_wait(wait_for::read, deadline);
      if (!readable) fail(error_kind::timeout, "timed out waiting for " + std::string(what));
      consume_input();
    }
    pgresult_ptr r(PQgetResult(conn_.get()));
    if (!r) break;
    switch (PQresultStatus(r.get())) {
      case PGRES_FATAL_ERROR:
        if (message.empty()) {
          message = one_line(PQresultErrorMessage(r.get()));
          const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
          sqlstate = state ? state : "";
        }
        break;
      case PGRES_COPY_IN:
      case PGRES_COPY_OUT:
      case PGRES_COPY_BOTH: fail(error_kind::connection, "COPY is not supported on this connection");
      default: last = result(std::move(r));
    }
  }
  collect_notifications();
  if (PQstatus(conn_.get()) == CONNECTION_BAD) {
    fail(error_kind::connection, message.empty() ? one_line(PQerrorMessage(conn_.get())) : message);
  }
  if (!message.empty()) throw error(error_kind::sql, std::move(message), std::move(sqlstate));
  co_return last;
}

asio::awaitable<result> connection::async_query(std::string_view sql, params args, clock::duration timeout) {
  if (!conn_) throw error(error_kind::connection, "connection is closed");
  const auto deadline = clock::now() + timeout;
  const std::string text(sql);
  const auto values = c_values(args);
  if (PQsendQueryParams(conn_.get(), text.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                        nullptr, 0) == 0) {
    fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
  }
  co_await async_flush(deadline);
  co_return co_await async_collect(deadline, "a query result");
}

asio::awaitable<result> connection::async_query_prepared(std::string name, std::string_view sql, params args,
                                                         clock::duration timeout) {
  if (!conn_) throw error(error_kind::connection, "connection is closed");
  const auto deadline = clock::now() + timeout;
  const auto values = c_values(args);
  if (!prepared_.contains(name)) {
    const std::string text(sql);
    if (PQsendPrepare(conn_.get(), name.c_str(), text.c_str(), static_cast<int>(values.size()), nullptr) == 0) {
      fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
    }
    co_await async_flush(deadline);
    (void)co_await async_collect(deadline, "a prepare result");
    prepared_.insert(name);
  }
  if (PQsendQueryPrepared(conn_.get(), name.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                          0) == 0) {
    fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
  }
  co_await async_flush(deadline);
  co_return co_await async_collect(deadline, "a query result");
}

asio::awaitable<void> connection::async_exec_script(std::string_view sql, clock::duration timeout) {
  if (!conn_) throw error(error_kind::connection, "connection is closed");
  const auto deadline = clock::now() + timeout;
  const std::string text(sql);
  if (PQsendQuery(conn_.get(), text.c_str()) == 0) fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
  co_await async_flush(deadline);
  (void)co_await async_collect(deadline, "a script result");
}

asio::awaitable<bool> connection::async_wait_input(clock::duration timeout) {
  if (!conn_) throw error(error_kind::connection, "connection is closed");
  if (!notifications_.empty()) co_return true;
  // GCC 12 miscompiles `co_await` inside an `if` condition followed by co_return: keep it named.
  const bool readable = co_await async_wait(wait_for::read, clock::now() + timeout);
  if (!readable) co_return false;
  consume_input();
  if (PQstatus(conn_.get()) == CONNECTION_BAD) fail(error_kind::connection, one_line(PQerrorMessage(conn_.get())));
  co_return true;
}

std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace outbox::db

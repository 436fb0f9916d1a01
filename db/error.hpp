#pragma once
// Database failures. Inside db/ a failed operation throws `db::error`; the
// engine-facing statements return `outcome<T>` instead, so an I/O failure is a
// value the caller handles where it happens (reconnect, retry, split a batch).
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

namespace outbox::db {

enum class error_kind {
  connect,     // could not establish a connection
  connection,  // the connection broke (server gone, socket error, terminated backend)
  timeout,     // an operation passed its deadline; the connection is closed
  sql,         // the server rejected a statement (see sqlstate)
};

class error : public std::runtime_error {
 public:
  error() : error(error_kind::sql, "no error") {}  // boost::system::result needs one
  error(error_kind kind, std::string message, std::string sqlstate = {})
      : std::runtime_error(std::move(message)), kind_(kind), sqlstate_(std::move(sqlstate)) {}

  [[nodiscard]] error_kind kind() const noexcept { return kind_; }
  [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }
  // The connection is unusable afterwards: reconnect before the next statement.
  // The statement's effect is unknown: it may or may not have committed.
  [[nodiscard]] bool connection_lost() const noexcept { return kind_ != error_kind::sql; }

 private:
  error_kind kind_;
  std::string sqlstate_;
};

// A value or the database failure that prevented it.
template <class T>
using outcome = boost::system::result<T, error>;

// `outcome<T>::value()` on a failure rethrows the db::error (found by ADL).
[[noreturn]] inline void throw_exception_from_error(const error& e, const boost::source_location&) { throw e; }

// Runs an operation that throws db::error and returns its failure as a value.
template <class T>
[[nodiscard]] boost::asio::awaitable<outcome<T>> async_try(boost::asio::awaitable<T> op) {
  std::optional<error> failure;
  try {
    co_return co_await std::move(op);
  } catch (const error& e) {
    failure = e;  // no co_return inside a handler
  }
  co_return std::move(*failure);
}

[[nodiscard]] inline boost::asio::awaitable<outcome<void>> async_try(boost::asio::awaitable<void> op) {
  std::optional<error> failure;
  try {
    co_await std::move(op);
  } catch (const error& e) {
    failure = e;
  }
  if (failure) co_return std::move(*failure);
  co_return outcome<void>{};
}

}  // namespace outbox::db

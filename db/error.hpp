#pragma once
// Database failures. A `db::error` ends the current unit of work; callers that
// see `connection_lost()` reconnect, others report the SQL error.
#include <stdexcept>
#include <string>

namespace outbox::db {

enum class error_kind {
  connect,     // could not establish a connection
  connection,  // the connection broke (server gone, socket error, terminated backend)
  timeout,     // an operation passed its deadline; the connection is closed
  sql,         // the server rejected a statement (see sqlstate)
};

class error : public std::runtime_error {
 public:
  error(error_kind kind, std::string message, std::string sqlstate = {})
      : std::runtime_error(std::move(message)), kind_(kind), sqlstate_(std::move(sqlstate)) {}

  [[nodiscard]] error_kind kind() const noexcept { return kind_; }
  [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }
  // The connection is unusable afterwards: reconnect before the next statement.
  [[nodiscard]] bool connection_lost() const noexcept { return kind_ != error_kind::sql; }

 private:
  error_kind kind_;
  std::string sqlstate_;
};

}  // namespace outbox::db

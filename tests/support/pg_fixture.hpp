#pragma once
// A scratch database per test, on the server of the libpq environment that
// scripts/with_postgres.sh exports: a copy of a template migrated once per
// server (or of template0), dropped afterwards unless PG_TEST_THROWAWAY_SERVER=1.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "db/params.hpp"
#include "db/result.hpp"

namespace outbox::test {

// Connection string for the server's maintenance database (libpq environment).
[[nodiscard]] std::string admin_conninfo();
// Connection string for database `name` on the same server.
[[nodiscard]] std::string conninfo_for(const std::string& name);

// Runs one statement to completion (blocking the caller, not an event loop).
db::result sql(const std::string& conninfo, const std::string& statement, db::params args = {});
// Runs a script of statements (simple protocol).
void sql_script(const std::string& conninfo, const std::string& script);

class scratch_database {
 public:
  // Creates a fresh database, migrated when `migrate` (copied from the migrated template).
  explicit scratch_database(bool migrate = true);
  ~scratch_database();
  scratch_database(const scratch_database&) = delete;
  scratch_database& operator=(const scratch_database&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& conninfo() const { return conninfo_; }
  // On the database's kept connection (below); on a connection of its own while
  // another thread's statement runs there.
  db::result query(const std::string& statement, db::params args = {}) const;
  // Number of rows for a `SELECT count(*) ...` style statement.
  [[nodiscard]] long long scalar(const std::string& statement, db::params args = {}) const;

 private:
  struct kept_connection;
  std::string name_;
  std::string conninfo_;
  // A backend per statement cost about 15 ms on the test machines, and a test
  // program runs thousands of statements: one connection is kept and reused.
  mutable std::mutex kept_mutex_;
  mutable std::unique_ptr<kept_connection> kept_;
};

}  // namespace outbox::test

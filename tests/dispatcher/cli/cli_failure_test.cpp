// The one line on-call reads when a command's database is not what it expects.
#include <doctest/doctest.h>

#include "db/error.hpp"
#include "dispatcher/cli/cli.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace cli_failure_test {

using outbox::cli::failure_line;
using outbox::db::error;
using outbox::db::error_kind;

TEST_CASE("a missing or old schema says which database and to run migrate, for every SQLSTATE that means it") {
  for (const char* sqlstate : {"42P01", "42883", "42703", "42704", "3F000"}) {
    CAPTURE(sqlstate);
    const error e(error_kind::sql, "relation \"event_delivery\" does not exist", sqlstate);
    CHECK(failure_line(e, "\"crm\" on 10.0.0.5:5432") ==
          "the outbox schema is missing or old in database \"crm\" on 10.0.0.5:5432: run `dispatcher migrate`");
  }
  CHECK(failure_line(error(error_kind::sql, "x", "42P01"), "") ==
        "the outbox schema is missing or old: run `dispatcher migrate`");
}

TEST_CASE("a lock timeout, a cancelled statement, a timeout and a lost connection each get their own line") {
  CHECK(failure_line(error(error_kind::sql, "canceling statement due to lock timeout", "55P03"), "\"crm\" on h:1")
            .starts_with("gave up after 5 s waiting for a lock held by another session in database \"crm\" on h:1"));
  CHECK(failure_line(error(error_kind::sql, "canceling statement due to statement timeout", "57014"), "")
            .starts_with("the statement was cancelled by the server"));
  CHECK(failure_line(error(error_kind::timeout, "timed out waiting for a result"), "")
            .starts_with("the database did not answer in time (timed out waiting for a result)"));
  CHECK(failure_line(error(error_kind::connection, "server closed the connection unexpectedly"), "") ==
        "lost the connection to the database: server closed the connection unexpectedly");
  CHECK(failure_line(error(error_kind::connect, "connection refused"), "") ==
        "cannot connect to the database: connection refused");
}

TEST_CASE("other database errors keep the server's text, escaped for the terminal") {
  const auto line = failure_line(error(error_kind::sql, "value \x1b[2J too long", "22001"), "\"crm\" on h:1");
  CHECK(line == "database error in database \"crm\" on h:1: value \\x1b[2J too long");
}

}  // namespace cli_failure_test

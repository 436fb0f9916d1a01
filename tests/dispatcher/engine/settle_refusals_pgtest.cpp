// A settle the database refuses for a reason of its own (read-only after a
// failover, an administrator's cancel, a lock timeout): the outcomes are kept
// and recorded once the database takes them again; the row is never sent twice
// and its attempt is recorded. Against a real PostgreSQL and a local HTTPS server.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include <libpq-fe.h>

#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace settle_refusals_pgtest {

using namespace std::chrono_literals;
using outbox::test::engine_harness;
using outbox::test::response_plan;

namespace {

constexpr const char* refused_log = "settle refused by the database, not for a row's data";

std::string current_database(const engine_harness& h) {
  return std::string(h.db.query("SELECT current_database()").text(0, 0));
}

// A transaction of another session holding a row lock until finish().
class row_lock {
 public:
  row_lock(const std::string& conninfo, std::int64_t id) : conn_(PQconnectdb(conninfo.c_str())) {
    REQUIRE(PQstatus(conn_) == CONNECTION_OK);
    run("BEGIN");
    run("SELECT 1 FROM event_delivery WHERE id = " + std::to_string(id) + " FOR UPDATE");
  }
  ~row_lock() { PQfinish(conn_); }
  row_lock(const row_lock&) = delete;
  row_lock& operator=(const row_lock&) = delete;
  void finish() { run("COMMIT"); }

 private:
  void run(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(r);
    PQclear(r);
    REQUIRE((status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK));
  }
  PGconn* conn_;
};

std::size_t refusals(const engine_harness& h) {
  std::size_t n = 0;
  const std::string logs = h.logs();
  for (auto at = logs.find(refused_log); at != std::string::npos; at = logs.find(refused_log, at + 1)) ++n;
  return n;
}

// The row was delivered once, recorded once, and nothing was lost or dropped.
void check_recorded_once(const engine_harness& h, std::int64_t id) {
  CHECK(h.server.requests().size() == 1);
  CHECK(h.attempts_of(id) == 1);
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1", {std::to_string(id)}) == 1);
  CHECK(h.logs().find("could not record an outcome; dropping it") == std::string::npos);
  CHECK(h.logs().find("splitting the batch") == std::string::npos);
}

}  // namespace

TEST_CASE("settle refusals: a database turned read-only keeps the outcome until it is writable again") {
  engine_harness h;
  h.server.script({response_plan::reply(200).after(1000ms)});
  h.start();
  const auto id = h.enqueue(1, "Lead");
  REQUIRE(h.server.wait_for_requests(1, 10s));
  // As after a failover onto a standby: new sessions are read-only; the settle connection is replaced.
  const std::string database = current_database(h);
  h.db.query("ALTER DATABASE \"" + database + "\" SET default_transaction_read_only = on");
  CHECK(h.db.scalar("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = 'outbox-dispatcher settle'") <= 1);
  // Refused again and again (after 250, 500, 1,000 ms): the outcome stays queued, the row ours.
  REQUIRE(h.wait_for([&] { return refusals(h) >= 3; }, 15s));
  CHECK(h.state_of(id) == "sending");
  h.db.query("ALTER DATABASE \"" + database + "\" RESET default_transaction_read_only");
  REQUIRE(h.wait_state(id, "sent"));
  check_recorded_once(h, id);
  CHECK(h.logs().find("25006") != std::string::npos);  // read_only_sql_transaction
  h.stop();
}

TEST_CASE("settle refusals: a cancelled settle and a lock timeout keep the outcome; it is recorded once") {
  engine_harness h;
  h.server.script({response_plan::reply(200).after(500ms)});
  h.start();
  const auto id = h.enqueue(1, "Lead");
  REQUIRE(h.server.wait_for_requests(1, 10s));
  // Another session holds the row: the settle waits for its lock.
  row_lock holder(h.db.conninfo(), id);
  REQUIRE(h.wait_for(
      [&] {
        return h.db.scalar(
                   "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                   "AND application_name = 'outbox-dispatcher settle' AND wait_event_type = 'Lock'") == 1;
      },
      10s));
  // Sessions from now on give up on a lock after 300 ms (55P03), as a DBA may set it.
  const std::string database = current_database(h);
  h.db.query("ALTER DATABASE \"" + database + "\" SET lock_timeout = '300ms'");
  // On-call cancels the waiting settle (57014); the next tries meet the lock timeout.
  CHECK(h.db.scalar("SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = 'outbox-dispatcher settle' "
                    "AND wait_event_type = 'Lock'") == 1);
  REQUIRE(h.wait_for([&] { return refusals(h) >= 1; }, 10s));
  CHECK(h.logs().find("57014") != std::string::npos);
  REQUIRE(h.wait_for([&] { return h.logs().find("55P03") != std::string::npos; }, 15s));
  holder.finish();
  REQUIRE(h.wait_state(id, "sent"));
  h.db.query("ALTER DATABASE \"" + database + "\" RESET lock_timeout");
  check_recorded_once(h, id);
  h.stop();
}

}  // namespace settle_refusals_pgtest

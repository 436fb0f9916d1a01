// The wake modes of sql/0003_wake_modes.sql at the SQL level: which inserting
// statements notify, switching modes on a live table, expiry of awake marks.
#include <doctest/doctest.h>
#include <libpq-fe.h>

#include <chrono>
#include <memory>

#include "db/wake_signal.hpp"
#include "tests/support/notify_probe.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace wake_modes_pgtest {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;
using outbox::test::notify_probe;
using outbox::test::scratch_database;

namespace {

void enqueue(const scratch_database& db, int lead) {
  db.query("SELECT enqueue_event_delivery($1, 'webhook', 'Lead', '{}'::jsonb)", {std::to_string(lead)});
}

outbox::db::wake_status status(const scratch_database& db) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::wake_status> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_wake_status(c);
  });
}

std::string set_mode(const scratch_database& db, const std::string& mode, std::chrono::milliseconds lock_timeout = 3s) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<std::string> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_set_wake_mode(c, mode, "test@host", lock_timeout);
  });
}

void publish(const scratch_database& db, const std::string& instance, bool awake, std::chrono::milliseconds ttl = 10s) {
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    if (awake) {
      co_await outbox::db::async_publish_awake(c, instance, ttl);
    } else {
      co_await outbox::db::async_publish_asleep(c, instance);
    }
  });
}

}  // namespace

TEST_CASE(
    "wake modes: adaptive notifies only while no dispatcher is awake; never for statements that inserted nothing") {
  scratch_database db;
  notify_probe probe(db.conninfo());
  const auto initial = status(db);
  CHECK(initial.mode == "adaptive");  // the migration's default
  CHECK(initial.trigger_enabled);
  CHECK(initial.awake.empty());

  enqueue(db, 1);
  CHECK(probe.count_since_last() == 1);  // nobody awake: notify
  enqueue(db, 1);                        // already there: inserts nothing
  CHECK(probe.count_since_last() == 0);

  publish(db, "dispatcher-a", true);
  REQUIRE(status(db).awake.size() == 1);
  CHECK(status(db).awake[0].expires_in_seconds > 5);
  enqueue(db, 2);
  CHECK(probe.count_since_last() == 0);  // a dispatcher is draining: no pg_notify
  db.query(
      "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload) "
      "SELECT g, 'webhook', 'Bulk', 'k' || g, '{}' FROM generate_series(100, 110) g");
  CHECK(probe.count_since_last() == 0);

  // An awake mark lapses by itself: a dispatcher that died while awake
  // silences notifications only until its mark expires.
  db.query("UPDATE outbox_dispatcher_awake SET awake_until = clock_timestamp() - interval '1 millisecond'");
  enqueue(db, 3);
  CHECK(probe.count_since_last() == 1);

  // Going asleep removes the mark, and forgets marks of long-dead dispatchers.
  publish(db, "dispatcher-a", true);
  db.query("INSERT INTO outbox_dispatcher_awake VALUES ('dead-long-ago', clock_timestamp() - interval '2 hours')");
  publish(db, "dispatcher-b", false);
  CHECK(db.scalar("SELECT count(*) FROM outbox_dispatcher_awake") == 1);  // a is still there
  publish(db, "dispatcher-a", false);
  CHECK(db.scalar("SELECT count(*) FROM outbox_dispatcher_awake") == 0);
  enqueue(db, 4);
  CHECK(probe.count_since_last() == 1);
}

TEST_CASE("wake modes: switching always/off/adaptive on a live table, with the previous mode returned") {
  scratch_database db;
  notify_probe probe(db.conninfo());
  publish(db, "dispatcher-a", true);

  CHECK(set_mode(db, "always") == "adaptive");
  CHECK(probe.count_since_last() == 1);  // the switch itself wakes dispatchers
  enqueue(db, 1);
  CHECK(probe.count_since_last() == 1);  // always: even with a dispatcher awake
  auto s = status(db);
  CHECK(s.mode == "always");
  CHECK(s.changed_by == "test@host");

  CHECK(set_mode(db, "off") == "always");
  (void)probe.count_since_last();
  CHECK_FALSE(status(db).trigger_enabled);
  enqueue(db, 2);
  CHECK(probe.count_since_last() == 0);  // no trigger at all

  CHECK(set_mode(db, "adaptive") == "off");
  (void)probe.count_since_last();
  CHECK(status(db).trigger_enabled);
  enqueue(db, 3);
  CHECK(probe.count_since_last() == 0);  // adaptive, and dispatcher-a is still awake

  // Someone disabled the trigger by hand: status shows it, setting the mode repairs it.
  db.query("ALTER TABLE event_delivery DISABLE TRIGGER event_delivery_notify_insert");
  CHECK_FALSE(status(db).trigger_enabled);
  CHECK(set_mode(db, "adaptive") == "adaptive");
  CHECK(status(db).trigger_enabled);

  CHECK_THROWS_WITH_AS(set_mode(db, "sometimes"), doctest::Contains("unknown wake mode"), outbox::db::error);
  CHECK(status(db).mode == "adaptive");
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 3);
}

TEST_CASE("wake modes: enabling or disabling the trigger gives up after the lock timeout instead of queueing inserts") {
  scratch_database db;
  // A CRM transaction that inserted and is still open holds a lock that ALTER TABLE must wait for.
  std::unique_ptr<PGconn, decltype(&PQfinish)> crm(PQconnectdb(db.conninfo().c_str()), &PQfinish);
  REQUIRE(PQstatus(crm.get()) == CONNECTION_OK);
  PQclear(PQexec(crm.get(), "BEGIN"));
  PQclear(PQexec(crm.get(), "SELECT enqueue_event_delivery(1, 'webhook', 'Lead', '{}'::jsonb)"));

  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(set_mode(db, "off", 200ms), doctest::Contains("lock timeout"), outbox::db::error);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(status(db).mode == "adaptive");  // rolled back as a whole
  CHECK(status(db).trigger_enabled);

  PQclear(PQexec(crm.get(), "COMMIT"));
  CHECK(set_mode(db, "off", 200ms) == "adaptive");
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 1);
}

}  // namespace wake_modes_pgtest

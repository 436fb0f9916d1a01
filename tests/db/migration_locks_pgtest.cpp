// Migrations never stall the CRM's writes (issue 30): a migration waiting for a
// table lock steps back after 2 s instead of queueing every insert behind it;
// index builds run CONCURRENTLY; a table rewrite on a large table is left to
// the operator's `dispatcher migrate`.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace migration_locks_pgtest {

using namespace std::chrono_literals;
using outbox::db::connection;
namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

namespace {

std::vector<outbox::db::migration> up_to(std::string_view last) {
  std::vector<outbox::db::migration> out;
  for (const auto& m : outbox::db::embedded_migrations()) {
    out.push_back(m);
    if (m.name == last) break;
  }
  return out;
}

asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

constexpr const char* insert_one =
    "SELECT enqueue_event_delivery((extract(epoch FROM clock_timestamp()) * 1e6)::bigint, 'webhook', 'Lead', '{}')";

}  // namespace

TEST_CASE("a migration waiting for a table lock lets CRM inserts through and applies once the lock is free") {
  outbox::test::scratch_database db(false);
  // Everything but a test migration that needs ACCESS EXCLUSIVE on event_delivery.
  auto all = outbox::db::embedded_migrations();
  all.push_back({"9000_lock_test.sql", "ALTER TABLE event_delivery ADD COLUMN lock_test int"});
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await outbox::db::async_migrate(c, outbox::db::embedded_migrations());
  });

  struct figures {
    std::chrono::milliseconds longest_insert{0};
    int inserts = 0;
    std::string migrate_error;
    std::chrono::milliseconds migrate_took{0};
  } f;
  asio::io_context io;
  bool migrated = false;
  // A CRM transaction that reads the table and stays open 7 s.
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto holder = co_await connection::async_connect(io.get_executor(), db.conninfo(), 5s);
        co_await holder.async_exec_script("BEGIN; SELECT count(*) FROM event_delivery;", 5s);
        co_await pause(7s);
        co_await holder.async_exec_script("COMMIT", 5s);
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await pause(300ms);
        const auto t0 = steady::now();
        try {
          auto c = co_await connection::async_connect(io.get_executor(), db.conninfo(), 5s);
          (void)co_await outbox::db::async_migrate(c, all);
        } catch (const std::exception& e) {
          f.migrate_error = e.what();
        }
        f.migrate_took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
        migrated = true;
      },
      asio::detached);
  // The CRM inserting a row every 50 ms meanwhile.
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto c = co_await connection::async_connect(io.get_executor(), db.conninfo(), 5s);
        while (!migrated) {
          const auto t0 = steady::now();
          (void)co_await c.async_query(insert_one, {}, 30s);
          f.longest_insert =
              std::max(f.longest_insert, std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0));
          ++f.inserts;
          co_await pause(50ms);
        }
      },
      asio::detached);
  io.run_for(60s);
  CAPTURE(f.longest_insert.count());
  CAPTURE(f.inserts);
  CHECK(f.migrate_error.empty());
  CHECK(f.migrate_took > 6s);  // it waited for the holder, in tries
  // Without lock_timeout the ALTER TABLE waits the holder's 7 s out in the
  // lock queue, and every insert waits behind it.
  CHECK(f.longest_insert < 3s);
  CHECK(f.inserts > 50);
  CHECK(db.scalar("SELECT count(*) FROM outbox_schema_migrations WHERE name = '9000_lock_test.sql'") == 1);
}

TEST_CASE("run --migrate refuses to rewrite a large table; the operator's migrate builds the index concurrently") {
  outbox::test::scratch_database db(false);
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await outbox::db::async_migrate(c, up_to("0006_fleet.sql"));
  });
  db.query(
      "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload, state, sent_at) "
      "SELECT g, 'webhook', 'Lead', 'k-' || g, '{}', 'sent', now() FROM generate_series(1, 120000) g");
  db.query("ANALYZE event_delivery");

  std::string refused;
  try {
    outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      (void)co_await outbox::db::async_migrate(c, outbox::db::embedded_migrations(),
                                               outbox::db::migrate_options{.allow_table_rewrite = false});
    });
  } catch (const std::exception& e) {
    refused = e.what();
  }
  CAPTURE(refused);
  CHECK(refused.find("0007_hot_claim.sql rewrites event_delivery (about 0.1 million rows)") != std::string::npos);
  CHECK(refused.find("run `dispatcher migrate` in a maintenance window") != std::string::npos);
  CHECK(db.scalar("SELECT count(*) FROM outbox_schema_migrations WHERE name >= '0007'") == 0);
  CHECK(db.scalar("SELECT count(*) FROM pg_attribute WHERE attrelid = 'event_delivery'::regclass "
                  "AND attname = 'final_state'") == 0);  // rolled back

  const auto report = outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::migrate_report> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_migrate(c, outbox::db::embedded_migrations());
  });
  CHECK(report.applied.size() == outbox::db::embedded_migrations().size() - 6);
  CHECK(db.scalar("SELECT count(*) FROM pg_index WHERE indexrelid = 'event_delivery_destination_work_idx'::regclass "
                  "AND indisvalid") == 1);
}

TEST_CASE("an index build that failed half-way is dropped and built again") {
  outbox::test::scratch_database db(false);
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await outbox::db::async_migrate(c, up_to("0008_function_search_path.sql"));
  });
  // What a CREATE INDEX CONCURRENTLY cancelled half-way leaves: an invalid index of that name.
  db.query("CREATE INDEX event_delivery_destination_work_idx ON event_delivery (provider)");
  db.query("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'event_delivery_destination_work_idx'::regclass");
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await outbox::db::async_migrate(c, outbox::db::embedded_migrations());
  });
  CHECK(db.scalar("SELECT count(*) FROM pg_index WHERE indexrelid = 'event_delivery_destination_work_idx'::regclass "
                  "AND indisvalid AND indnatts = 3") == 1);
}

}  // namespace migration_locks_pgtest

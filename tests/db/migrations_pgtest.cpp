// Schema migrations: apply once, re-apply as a no-op, race safely, refuse unknown schemas.
#include <doctest/doctest.h>

#include <chrono>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace migrations_pgtest {

using namespace std::chrono_literals;
using outbox::db::connection;
namespace asio = boost::asio;

TEST_CASE("migrations apply in order, once, and re-running is a no-op") {
  outbox::test::scratch_database db(false);
  const auto& all = outbox::db::embedded_migrations();
  REQUIRE_FALSE(all.empty());

  auto [first, second] = outbox::test::run_async(
      [&](auto ex) -> asio::awaitable<std::pair<outbox::db::migrate_report, outbox::db::migrate_report>> {
        auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
        auto a = co_await outbox::db::async_migrate(c, all);
        auto b = co_await outbox::db::async_migrate(c, all);
        co_return std::pair{a, b};
      });
  CHECK(first.applied.size() == all.size());
  CHECK(first.already_applied.empty());
  CHECK(second.applied.empty());
  CHECK(second.already_applied.size() == all.size());
  CHECK(db.scalar("SELECT count(*) FROM outbox_schema_migrations") == static_cast<long long>(all.size()));
  CHECK(db.scalar("SELECT count(*) FROM pg_tables WHERE tablename IN ('event_delivery', 'event_delivery_attempt')") ==
        2);
}

TEST_CASE("concurrent migrate runs apply each migration exactly once") {
  outbox::test::scratch_database db(false);
  const auto& all = outbox::db::embedded_migrations();
  constexpr int runners = 4;
  std::vector<outbox::db::migrate_report> reports;
  std::vector<std::string> failures;

  asio::io_context io;
  for (int i = 0; i < runners; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          try {
            auto c = co_await connection::async_connect(io.get_executor(), db.conninfo(), 5s);
            reports.push_back(co_await outbox::db::async_migrate(c, all));
          } catch (const std::exception& e) {
            failures.emplace_back(e.what());
          }
        },
        asio::detached);
  }
  io.run_for(60s);

  CHECK(failures.empty());
  REQUIRE(reports.size() == runners);
  std::size_t applied = 0;
  for (const auto& r : reports) applied += r.applied.size();
  CHECK(applied == all.size());
  CHECK(db.scalar("SELECT count(*) FROM outbox_schema_migrations") == static_cast<long long>(all.size()));
}

TEST_CASE("a database migrated by a newer version is refused with a clear message") {
  outbox::test::scratch_database db;
  db.query("INSERT INTO outbox_schema_migrations (name, checksum) VALUES ('9999_from_the_future.sql', 'x')");
  std::string message;
  try {
    outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      (void)co_await outbox::db::async_migrate(c, outbox::db::embedded_migrations());
    });
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message.find("9999_from_the_future.sql") != std::string::npos);
  CHECK(message.find("newer version") != std::string::npos);
}

TEST_CASE("a failing migration rolls back and names itself") {
  outbox::test::scratch_database db(false);
  auto all = outbox::db::embedded_migrations();
  all.push_back({"9000_broken.sql", "CREATE TABLE good_part (x int); SELECT no_such_function();"});
  std::string message;
  try {
    outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
      auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
      (void)co_await outbox::db::async_migrate(c, all);
    });
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message.find("9000_broken.sql") != std::string::npos);
  CHECK(db.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'good_part'") == 0);
  CHECK(db.scalar("SELECT count(*) FROM outbox_schema_migrations") ==
        static_cast<long long>(outbox::db::embedded_migrations().size()));
}

TEST_CASE("tables in a schema of their own: migrated through options=-csearch_path, used from any search_path") {
  outbox::test::scratch_database db(false);
  db.query("CREATE SCHEMA outbox");
  outbox::db::connect_options engine;
  engine.statement_timeout = 30s;
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    // As DATABASE_URL=...?options=-csearch_path%3Doutbox: migrate, then the engine's own statements.
    auto c = co_await connection::async_connect(ex, db.conninfo() + " options='-csearch_path=outbox'", 5s, engine);
    (void)co_await outbox::db::async_migrate(c, outbox::db::embedded_migrations());
    (void)co_await c.async_query("SELECT count(*) FROM event_delivery", {}, 5s);
  });
  CHECK(db.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = 'outbox' AND tablename = 'event_delivery'") == 1);
  CHECK(db.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'event_delivery'") == 0);
  // A CRM session whose search_path knows nothing of the schema calls the function by its name:
  // the function, its key function and the NOTIFY trigger still find their tables.
  CHECK(db.scalar("SELECT count(*) FILTER (WHERE outbox.enqueue_event_delivery(7, 'webhook', 'Lead', '{}'::jsonb)) "
                  "FROM (SELECT set_config('search_path', 'public', false)) AS s") == 1);
  CHECK(db.scalar("SELECT count(*) FROM outbox.event_delivery WHERE lead_project_id = 7") == 1);
  CHECK(db.scalar("SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                  "WHERE n.nspname = 'outbox' AND array_to_string(p.proconfig, ',') LIKE '%search_path=pg_catalog, "
                  "outbox, pg_temp%'") == 7);  // 0008's four, the registry's trigger (0010), 0013's two
  db.query("SELECT set_config('search_path', '\"$user\", public', false)");
}

}  // namespace migrations_pgtest

// The async libpq layer against a real PostgreSQL server.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db/connection.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace connection_pgtest {

using namespace std::chrono_literals;
using outbox::db::connection;
namespace asio = boost::asio;

TEST_CASE("parameters round-trip NULLs, unicode and a large jsonb document") {
  outbox::test::scratch_database db;
  std::string big = R"({"items":[)";
  for (int i = 0; i < 50000; ++i)
    big += (i ? "," : "") + std::string(R"({"n":)") + std::to_string(i) + R"(,"s":"ünïcødé ✓"})";
  big += "]}";

  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::params args{std::nullopt, "Zoë 日本語 🚀", big};
    auto r = co_await c.async_query(
        "SELECT $1::text IS NULL, $2::text, length($2::text), "
        "jsonb_array_length(($3::jsonb)->'items'), ($3::jsonb)->'items'->49999->>'s'",
        std::move(args), 30s);
    CHECK(r.rows() == 1);
    CHECK(r.boolean(0, 0));
    CHECK(r.text(0, 1) == "Zoë 日本語 🚀");
    CHECK(r.int64(0, 2) == 9);
    CHECK(r.int64(0, 3) == 50000);
    CHECK(r.text(0, 4) == "ünïcødé ✓");
    CHECK(r.is_null(0, 0) == false);
  });
  CHECK(big.size() > 1'000'000);
}

TEST_CASE("a query past its deadline fails with a timeout and closes the connection") {
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    const auto started = std::chrono::steady_clock::now();
    std::optional<outbox::db::error_kind> kind;
    try {
      (void)co_await c.async_query("SELECT pg_sleep(10)", {}, 200ms);
    } catch (const outbox::db::error& e) {
      kind = e.kind();
    }
    const auto took = std::chrono::steady_clock::now() - started;
    REQUIRE(kind.has_value());
    CHECK(*kind == outbox::db::error_kind::timeout);
    CHECK(took < 3s);
    CHECK_FALSE(c.is_open());
  });
}

TEST_CASE("an SQL error reports its SQLSTATE and leaves the connection usable") {
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    std::string state;
    try {
      (void)co_await c.async_query("SELECT 1/0", {}, 5s);
    } catch (const outbox::db::error& e) {
      state = e.sqlstate();
      CHECK_FALSE(e.connection_lost());
    }
    CHECK(state == "22012");
    auto r = co_await c.async_query("SELECT 41 + 1", {}, 5s);
    CHECK(r.int64(0, 0) == 42);
  });
}

TEST_CASE("prepared statements are reused across calls") {
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto c = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    for (int i = 0; i < 3; ++i) {
      outbox::db::params args{std::to_string(i)};
      auto r = co_await c.async_query_prepared("add_one", "SELECT $1::int + 1", std::move(args), 5s);
      CHECK(r.int64(0, 0) == i + 1);
    }
    auto count = co_await c.async_query("SELECT count(*) FROM pg_prepared_statements WHERE name = 'add_one'", {}, 5s);
    CHECK(count.int64(0, 0) == 1);
  });
}

TEST_CASE("a bad connection string or unreachable server gives one clear line") {
  for (const std::string conninfo :
       {"host=127.0.0.1 port=1 connect_timeout=2", "this is not a conninfo", "postgresql://nobody@127.0.0.1:1/none"}) {
    CAPTURE(conninfo);
    std::string message;
    std::optional<outbox::db::error_kind> kind;
    try {
      outbox::test::run_async(
          [&](auto ex) -> asio::awaitable<void> { (void)co_await connection::async_connect(ex, conninfo, 3s); });
    } catch (const outbox::db::error& e) {
      message = e.what();
      kind = e.kind();
    }
    REQUIRE(kind.has_value());
    CHECK(*kind == outbox::db::error_kind::connect);
    CHECK_FALSE(message.empty());
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("a terminated backend surfaces as a lost connection") {
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto victim = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    auto admin = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    outbox::db::params pid{std::to_string(victim.backend_pid())};
    (void)co_await admin.async_query("SELECT pg_terminate_backend($1::int)", std::move(pid), 5s);
    bool lost = false;
    try {
      (void)co_await victim.async_query("SELECT 1", {}, 5s);
    } catch (const outbox::db::error& e) {
      lost = e.connection_lost();
    }
    CHECK(lost);
    CHECK_FALSE(victim.is_open());
  });
}

TEST_CASE("still_open tells an idle connection the server ended from one that is fine or was notified") {
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    auto victim = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    auto admin = co_await connection::async_connect(ex, outbox::test::admin_conninfo(), 5s);
    (void)co_await victim.async_query("LISTEN still_open_test", {}, 5s);
    CHECK(victim.still_open());
    // A notification is input too, but not the end: still_open reads it (polled,
    // as waiting for the socket would read it first).
    (void)co_await admin.async_query("NOTIFY still_open_test, 'hello'", {}, 5s);
    std::size_t notified = 0;
    asio::steady_timer pause(ex);
    for (int i = 0; i < 500 && notified == 0; ++i) {
      REQUIRE(victim.still_open());
      notified = victim.take_notifications().size();
      pause.expires_after(10ms);
      co_await pause.async_wait(asio::use_awaitable);
    }
    CHECK(notified == 1);
    // Waits until the backend is gone (PostgreSQL 14+), so its goodbye is in the socket.
    outbox::db::params pid{std::to_string(victim.backend_pid())};
    const auto gone = co_await admin.async_query("SELECT pg_terminate_backend($1::int, 5000)", std::move(pid), 10s);
    CHECK(gone.text(0, 0) == std::string_view("t"));
    CHECK_FALSE(victim.still_open());
    CHECK_FALSE(victim.is_open());
  });
}

TEST_CASE("the user's options (conninfo or PGOPTIONS) are kept beside the engine's statement_timeout") {
  outbox::test::scratch_database db;
  outbox::db::connect_options engine;
  engine.statement_timeout = 4321ms;
  const auto shown = [&](const std::string& conninfo) {
    std::pair<std::string, std::string> out;
    outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
      auto c = co_await connection::async_connect(ex, conninfo, 5s, engine);
      auto r =
          co_await c.async_query("SELECT current_setting('search_path'), current_setting('statement_timeout')", {}, 5s);
      out = {std::string(r.text(0, 0)), std::string(r.text(0, 1))};
    });
    return out;
  };
  // As in DATABASE_URL: options=-csearch_path=outbox (tables in a schema of their own).
  const auto in_conninfo = shown(db.conninfo() + " options='-csearch_path=outbox'");
  CHECK(in_conninfo.first == "outbox");
  CHECK(in_conninfo.second == "4321ms");
  ::setenv("PGOPTIONS", "-c search_path=crm", 1);
  const auto in_env = shown(db.conninfo());
  ::unsetenv("PGOPTIONS");
  CHECK(in_env.first == "crm");
  CHECK(in_env.second == "4321ms");
  CHECK(shown(db.conninfo()).first == "\"$user\", public");  // none given: the server's
}

}  // namespace connection_pgtest

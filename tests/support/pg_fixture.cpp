#include "tests/support/pg_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "tests/support/run_async.hpp"

namespace outbox::test {
namespace {

using namespace std::chrono_literals;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string unique_name() {
  static std::atomic<int> counter{0};
  static const unsigned salt = std::random_device{}() % 100000;
  return "outbox_test_" + std::to_string(getpid()) + "_" + std::to_string(salt) + "_" + std::to_string(++counter);
}

}  // namespace

std::string admin_conninfo() { return "dbname=" + env_or("PGDATABASE", "postgres"); }

std::string conninfo_for(const std::string& name) { return "dbname=" + name; }

db::result sql(const std::string& conninfo, const std::string& statement, db::params args) {
  return run_async([&](auto ex) -> boost::asio::awaitable<db::result> {
    auto c = co_await db::connection::async_connect(ex, conninfo, 10s);
    co_return co_await c.async_query(statement, args, 60s);
  });
}

void sql_script(const std::string& conninfo, const std::string& script) {
  run_async([&](auto ex) -> boost::asio::awaitable<void> {
    auto c = co_await db::connection::async_connect(ex, conninfo, 10s);
    co_await c.async_exec_script(script, 60s);
  });
}

// The connection and the event loop it belongs to; used by one thread at a time.
struct scratch_database::kept_connection {
  boost::asio::io_context io;
  std::optional<db::connection> conn;

  boost::asio::awaitable<db::result> async_query(std::string conninfo, std::string statement, db::params args) {
    // A server restart or a terminated backend since the last statement: connect again.
    if (conn && !conn->still_open()) conn.reset();
    if (!conn) conn.emplace(co_await db::connection::async_connect(io.get_executor(), conninfo, 10s));
    co_return co_await conn->async_query(statement, args, 60s);
  }

  db::result query(const std::string& conninfo, const std::string& statement, db::params args) {
    io.restart();
    auto done = boost::asio::co_spawn(io, async_query(conninfo, statement, std::move(args)), boost::asio::use_future);
    io.run_for(75s);
    if (done.wait_for(0s) != std::future_status::ready)
      throw std::runtime_error("test statement did not finish in time");
    return done.get();
  }
};

scratch_database::scratch_database(bool migrate) : name_(unique_name()), conninfo_(conninfo_for(name_)) {
  sql_script(admin_conninfo(), "CREATE DATABASE " + db::quote_identifier(name_) + " TEMPLATE template0");
  if (migrate) {
    run_async([&](auto ex) -> boost::asio::awaitable<void> {
      auto c = co_await db::connection::async_connect(ex, conninfo_, 10s);
      (void)co_await db::async_migrate(c, db::embedded_migrations());
    });
    // For the benchmark's A/B runs of a schema change (docs/benchmarks.md), e.g.
    // "DROP INDEX event_delivery_destination_work_idx": what the schema costs.
    if (const char* after = std::getenv("OUTBOX_BENCH_AFTER_MIGRATE_SQL"); after && *after)
      sql_script(conninfo_, after);
  }
}

db::result scratch_database::query(const std::string& statement, db::params args) const {
  std::unique_lock lock(kept_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return sql(conninfo_, statement, std::move(args));
  if (!kept_) kept_ = std::make_unique<kept_connection>();
  return kept_->query(conninfo_, statement, std::move(args));
}

scratch_database::~scratch_database() {
  kept_.reset();  // before the drop, which would terminate it
  try {
    sql_script(admin_conninfo(), "DROP DATABASE IF EXISTS " + db::quote_identifier(name_) + " WITH (FORCE)");
  } catch (...) {
    // A failed drop only leaves a database in a throwaway cluster; never throw from a destructor.
  }
}

long long scratch_database::scalar(const std::string& statement, db::params args) const {
  return query(statement, std::move(args)).int64(0, 0);
}

}  // namespace outbox::test

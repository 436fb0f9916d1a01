#include "tests/support/pg_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>

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

scratch_database::scratch_database(bool migrate) : name_(unique_name()), conninfo_(conninfo_for(name_)) {
  sql_script(admin_conninfo(), "CREATE DATABASE " + db::quote_identifier(name_) + " TEMPLATE template0");
  if (migrate) {
    run_async([&](auto ex) -> boost::asio::awaitable<void> {
      auto c = co_await db::connection::async_connect(ex, conninfo_, 10s);
      (void)co_await db::async_migrate(c, db::embedded_migrations());
    });
  }
}

scratch_database::~scratch_database() {
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

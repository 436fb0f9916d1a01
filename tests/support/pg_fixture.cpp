#include "tests/support/pg_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
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

// Names the set of migrations this binary carries (FNV-1a of names and texts).
std::string migrations_fingerprint() {
  std::uint64_t hash = 14695981039346656037ull;
  const auto mix = [&](const std::string& text) {
    for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
    hash = (hash ^ 0xffu) * 1099511628211ull;  // the end of each text
  };
  for (const auto& m : db::embedded_migrations()) {
    mix(m.name);
    mix(m.sql);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

constexpr const char* template_lock_key = "7219630";  // pg_advisory_lock: one builder per server

// Migrating costs about 150 ms of the server's and the test's CPU, and the test
// programs create about 190 databases: each copies a database migrated once per
// server and set of migrations. The copy is FILE_COPY: WAL_LOG (the default)
// would write each 8 MB copy to the WAL and leave it dirty in shared buffers for
// every later checkpoint (a restart test's included) to write out again. It is
// built under another name and renamed when complete, so a builder that died
// half-way leaves nothing another would copy, and takes no connections, which
// would make every copy of it fail.
std::string build_migrated_template() {
  const std::string name = "outbox_template_" + migrations_fingerprint();
  const std::string building = name + "_building";
  // Built outside the coroutine: GCC 12 miscompiles braced lists inside one.
  const db::params lock_key{std::string(template_lock_key)};
  const db::params named{name};
  run_async([&](auto ex) -> boost::asio::awaitable<void> {
    auto admin = co_await db::connection::async_connect(ex, admin_conninfo(), 10s);
    (void)co_await admin.async_query("SELECT pg_advisory_lock($1)", lock_key, 120s);
    const auto found = co_await admin.async_query("SELECT count(*) FROM pg_database WHERE datname = $1", named, 10s);
    if (found.int64(0, 0) > 0) co_return;  // built by an earlier test program; the session's end unlocks
    co_await admin.async_exec_script("DROP DATABASE IF EXISTS " + db::quote_identifier(building) + " WITH (FORCE)",
                                     60s);
    co_await admin.async_exec_script("CREATE DATABASE " + db::quote_identifier(building) + " TEMPLATE template0", 60s);
    {
      auto c = co_await db::connection::async_connect(ex, conninfo_for(building), 10s);
      (void)co_await db::async_migrate(c, db::embedded_migrations());
    }
    // The rename waits (up to 5 s) for the migrating session to be gone.
    co_await admin.async_exec_script("ALTER DATABASE " + db::quote_identifier(building) +
                                         " WITH ALLOW_CONNECTIONS false; " + "ALTER DATABASE " +
                                         db::quote_identifier(building) + " RENAME TO " + db::quote_identifier(name),
                                     60s);
  });
  return name;
}

const std::string& migrated_template() {
  static const std::string name = build_migrated_template();  // once per test program
  return name;
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
  const std::string source = migrate ? migrated_template() : std::string("template0");
  sql_script(admin_conninfo(), "CREATE DATABASE " + db::quote_identifier(name_) + " TEMPLATE " +
                                   db::quote_identifier(source) + " STRATEGY = FILE_COPY");
  if (migrate) {
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
  // The test command's server is deleted afterwards (scripts/test.sh sets
  // PG_TEST_THROWAWAY_SERVER): the database can stay. A DROP DATABASE forces a
  // checkpoint of the whole server, which writes out every other test's dirty
  // pages too (0.12 - 0.17 s when idle, more under load). Benchmarks still drop
  // theirs: autovacuum on a left one would count in the next pass's figures.
  if (const char* throwaway = std::getenv("PG_TEST_THROWAWAY_SERVER"); throwaway && *throwaway == '1') return;
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

#include "db/migrations.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/sha.h>

#include "db/transaction_sql.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;

constexpr auto migrate_timeout = 60s;  // waiting for another migrator's lock counts here
// A migration's own statements: an index build or a table rewrite on a large
// table takes minutes (docs/operations.md, "Upgrading").
constexpr auto build_timeout = 60min;
// How long a migration waits for a table lock before it steps back (CRM inserts
// queue behind a waiting ALTER TABLE), and how often it tries.
constexpr const char* lock_timeout_text = "2 s";
constexpr const char* lock_timeout_sql = "SET LOCAL lock_timeout = '2s'";
constexpr int lock_attempts = 10;

// Migrations that rewrite event_delivery under ACCESS EXCLUSIVE: CRM inserts
// wait for the whole rewrite. `run --migrate` and Django leave them to an
// explicit `dispatcher migrate` once the table is larger than this.
constexpr std::string_view rewriting_migrations[] = {"0007_hot_claim.sql"};
constexpr double rewrite_rows_without_asking = 100'000;
constexpr const char* estimated_rows_sql =
    "SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = to_regclass('event_delivery')";

// A fixed key for pg_advisory_lock: "outbox-migrate" as an integer.
// Tried, not waited for: a session waiting in pg_advisory_lock holds a snapshot,
// and CREATE INDEX CONCURRENTLY in the session that holds the lock waits for
// every older snapshot to go (a deadlock PostgreSQL breaks by failing one).
constexpr const char* try_lock_sql = "SELECT pg_try_advisory_lock(7310594112315183976)";
constexpr auto lock_poll = 250ms;
constexpr const char* unlock_sql = "SELECT pg_advisory_unlock(7310594112315183976)";

constexpr const char* create_table_sql = R"sql(
CREATE TABLE IF NOT EXISTS outbox_schema_migrations (
    name       text PRIMARY KEY,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
))sql";

constexpr const char* list_sql = "SELECT name, checksum FROM outbox_schema_migrations ORDER BY name";
constexpr const char* record_sql = "INSERT INTO outbox_schema_migrations (name, checksum) VALUES ($1, $2)";
constexpr const char* table_exists_sql = "SELECT to_regclass('outbox_schema_migrations') IS NOT NULL";

std::string checksum(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

// A migration that must not run inside a transaction (CREATE INDEX
// CONCURRENTLY) says so on its first line; its statements run one at a time.
constexpr std::string_view no_transaction_marker = "-- outbox:no-transaction";

bool runs_outside_transaction(const migration& m) { return m.sql.starts_with(no_transaction_marker); }

// The statements of a no-transaction migration: each ends with a semicolon at
// the end of a line; comment lines between them are dropped.
std::vector<std::string> statements_of(const std::string& sql) {
  std::vector<std::string> out;
  std::string current;
  std::size_t start = 0;
  while (start < sql.size()) {
    std::size_t end = sql.find('\n', start);
    if (end == std::string::npos) end = sql.size();
    const std::string_view line(sql.data() + start, end - start);
    start = end + 1;
    if (current.empty() && (line.starts_with("--") || line.find_first_not_of(" \t\r") == std::string_view::npos))
      continue;
    current.append(line).push_back('\n');
    const auto last = line.find_last_not_of(" \t\r");
    if (last != std::string_view::npos && line[last] == ';') out.push_back(std::exchange(current, {}));
  }
  if (current.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(current);
  return out;
}

asio::awaitable<void> apply_in_transaction(connection& conn, const migration& m) {
  co_await conn.async_exec_script(begin_sql, migrate_timeout);
  // Waiting behind a long CRM transaction for the table's lock would queue every
  // CRM insert behind this migration: give up quickly and try again.
  co_await conn.async_exec_script(lock_timeout_sql, migrate_timeout);
  co_await conn.async_exec_script(m.sql, build_timeout);
  params record{m.name, checksum(m.sql)};  // named: GCC 12 mishandles braced temporaries across co_await
  (void)co_await conn.async_query(record_sql, std::move(record), migrate_timeout);
  co_await conn.async_exec_script(commit_sql, migrate_timeout);
}

// CREATE INDEX CONCURRENTLY and the like: CRM writes go on while they run.
asio::awaitable<void> apply_outside_transaction(connection& conn, const migration& m) {
  for (const auto& statement : statements_of(m.sql)) co_await conn.async_exec_script(statement, build_timeout);
  params record{m.name, checksum(m.sql)};
  (void)co_await conn.async_query(record_sql, std::move(record), migrate_timeout);
}

// Applies one migration; a lock not granted within lock_timeout rolls it back
// and tries again after a pause, up to lock_attempts times.
asio::awaitable<void> apply_one(connection& conn, const migration& m) {
  for (int attempt = 1;; ++attempt) {
    std::string failure, sqlstate;
    try {
      if (runs_outside_transaction(m)) {
        co_await apply_outside_transaction(conn, m);
      } else {
        co_await apply_in_transaction(conn, m);
      }
      co_return;
    } catch (const error& e) {
      if (e.connection_lost()) throw;
      failure = e.what();
      sqlstate = e.sqlstate();
    }
    // No co_await inside a handler: roll back here (a no-op outside a transaction).
    co_await conn.async_exec_script(rollback_sql, migrate_timeout);
    if (sqlstate != "55P03" || attempt == lock_attempts) {
      const std::string waited = sqlstate == "55P03"
                                     ? " (the table's lock was not granted within " + std::string(lock_timeout_text) +
                                           " in " + std::to_string(attempt) + " tries: a long transaction?)"
                                     : "";
      throw error(error_kind::sql, "migration " + m.name + " failed: " + failure + waited, sqlstate);
    }
    asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::seconds(attempt));
    co_await pause.async_wait(asio::use_awaitable);
  }
}

}  // namespace

asio::awaitable<std::vector<std::string>> async_applied_migrations(connection& conn) {
  std::vector<std::string> names;
  const auto exists = co_await conn.async_query(table_exists_sql, {}, migrate_timeout);
  if (!exists.boolean(0, 0)) co_return names;
  const auto r = co_await conn.async_query(list_sql, {}, migrate_timeout);
  for (int i = 0; i < r.rows(); ++i) names.emplace_back(r.text(i, 0));
  co_return names;
}

asio::awaitable<migration_status> async_migration_status(connection& conn, const std::vector<migration>& all) {
  migration_status status;
  std::set<std::string> recorded;
  const auto exists = co_await conn.async_query(table_exists_sql, {}, migrate_timeout);
  if (exists.boolean(0, 0)) {
    const auto r = co_await conn.async_query(list_sql, {}, migrate_timeout);
    for (int i = 0; i < r.rows(); ++i) {
      const std::string name(r.text(i, 0));
      recorded.insert(name);
      const auto known = std::find_if(all.begin(), all.end(), [&](const migration& m) { return m.name == name; });
      if (known == all.end()) {
        status.unknown.push_back(name);
      } else if (checksum(known->sql) != r.text(i, 1)) {
        status.changed.push_back(name);
      }
    }
  }
  for (const auto& m : all) (recorded.contains(m.name) ? status.applied : status.pending).push_back(m.name);
  co_return status;
}

// Waits for another migrator (its index builds may take minutes) one short
// statement at a time.
asio::awaitable<void> take_migrate_lock(connection& conn) {
  const auto deadline = std::chrono::steady_clock::now() + build_timeout;
  for (;;) {
    const auto taken = co_await conn.async_query(try_lock_sql, {}, migrate_timeout);
    if (taken.boolean(0, 0)) co_return;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(
          "another `dispatcher migrate` (or Django's migrate) held the migration lock for an hour");
    asio::steady_timer pause(co_await asio::this_coro::executor, lock_poll);
    co_await pause.async_wait(asio::use_awaitable);
  }
}

// Refuses (std::runtime_error) a table rewrite on a table large enough that
// its lock would stall the CRM, unless the caller is the operator's `migrate`.
asio::awaitable<void> check_rewrite_allowed(connection& conn, const migration& m, const migrate_options& options) {
  if (options.allow_table_rewrite) co_return;
  if (std::find(std::begin(rewriting_migrations), std::end(rewriting_migrations), m.name) ==
      std::end(rewriting_migrations))
    co_return;
  const auto r = co_await conn.async_query(estimated_rows_sql, {}, migrate_timeout);
  const double rows = r.rows() > 0 && !r.is_null(0, 0) ? std::stod(std::string(r.text(0, 0))) : 0;
  if (rows <= rewrite_rows_without_asking) co_return;
  const auto millions = static_cast<long long>(rows / 1e6 * 10 + 0.5);
  throw std::runtime_error("migration " + m.name + " rewrites event_delivery (about " + std::to_string(millions / 10) +
                           "." + std::to_string(millions % 10) +
                           " million rows) under a lock that makes CRM inserts wait until it is done (see "
                           "docs/operations.md, \"Upgrading\"): run `dispatcher migrate` in a maintenance window "
                           "(prune first to make it shorter), then start again");
}

asio::awaitable<migrate_report> async_migrate(connection& conn, const std::vector<migration>& all,
                                              migrate_options options) {
  co_await take_migrate_lock(conn);
  migrate_report report;
  std::string failure;
  try {
    co_await conn.async_exec_script(create_table_sql, migrate_timeout);
    const auto recorded = co_await conn.async_query(list_sql, {}, migrate_timeout);
    std::set<std::string> done;
    for (int i = 0; i < recorded.rows(); ++i) {
      const std::string name(recorded.text(i, 0));
      const auto known = std::find_if(all.begin(), all.end(), [&](const migration& m) { return m.name == name; });
      if (known == all.end()) {
        throw std::runtime_error("the database has migration " + name +
                                 ", which this dispatcher does not know: it was migrated by a newer version; "
                                 "upgrade the dispatcher instead");
      }
      if (checksum(known->sql) != recorded.text(i, 1)) {
        throw std::runtime_error("migration " + name +
                                 " was changed after it was applied; add a new migration instead of editing it");
      }
      done.insert(name);
      report.already_applied.push_back(name);
    }
    for (const auto& m : all) {
      if (done.contains(m.name)) continue;
      co_await check_rewrite_allowed(conn, m, options);
      co_await apply_one(conn, m);
      report.applied.push_back(m.name);
    }
  } catch (const error& e) {
    if (e.connection_lost()) throw;  // the session and its lock are gone
    failure = e.what();
  } catch (const std::runtime_error& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    // No co_await inside a handler: clean up here, then rethrow as one clear error.
    co_await conn.async_exec_script(rollback_sql, migrate_timeout);
    (void)co_await conn.async_query(unlock_sql, {}, migrate_timeout);
    throw std::runtime_error(failure);
  }
  (void)co_await conn.async_query(unlock_sql, {}, migrate_timeout);
  co_return report;
}

}  // namespace outbox::db

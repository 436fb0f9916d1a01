#include "db/migrations.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>

#include <openssl/sha.h>

#include "db/transaction_sql.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;

constexpr auto migrate_timeout = 60s;  // waiting for another migrator's lock counts here

// A fixed key for pg_advisory_lock: "outbox-migrate" as an integer.
constexpr const char* lock_sql = "SELECT pg_advisory_lock(7310594112315183976)";
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

asio::awaitable<void> apply_one(connection& conn, const migration& m) {
  co_await conn.async_exec_script(begin_sql, migrate_timeout);
  try {
    co_await conn.async_exec_script(m.sql, migrate_timeout);
    params record{m.name, checksum(m.sql)};  // named: GCC 12 mishandles braced temporaries across co_await
    (void)co_await conn.async_query(record_sql, std::move(record), migrate_timeout);
  } catch (const error& e) {
    if (e.connection_lost()) throw;
    // The transaction is aborted; async_migrate rolls it back and reports this.
    throw error(error_kind::sql, "migration " + m.name + " failed: " + e.what(), e.sqlstate());
  }
  co_await conn.async_exec_script(commit_sql, migrate_timeout);
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

asio::awaitable<migrate_report> async_migrate(connection& conn, const std::vector<migration>& all) {
  (void)co_await conn.async_query(lock_sql, {}, migrate_timeout);
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

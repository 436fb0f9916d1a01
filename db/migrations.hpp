#pragma once
// Numbered SQL migrations (sql/NNNN_name.sql, embedded at build time), applied
// in order, once each, under an advisory lock so concurrent runs are safe.
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"

namespace outbox::db {

struct migration {
  std::string name;  // file name, e.g. "0001_event_delivery.sql"; its order is the name's
  std::string sql;
};

// The migrations compiled into this binary, in order.
[[nodiscard]] const std::vector<migration>& embedded_migrations();

struct migrate_report {
  std::vector<std::string> applied;          // names applied by this run, in order
  std::vector<std::string> already_applied;  // names found recorded before this run
};

struct migrate_options {
  // False for `run --migrate` (and the tests of it): a migration that rewrites
  // event_delivery is refused when the table is large (the CRM would stall);
  // the operator's `dispatcher migrate` applies it.
  bool allow_table_rewrite = true;
};

// Applies pending migrations. Each waits at most 2 s for a table lock and
// tries again (10 times) rather than queue the CRM's writes behind it. Throws db::error, or std::runtime_error when the
// database records a migration this binary does not know (a newer schema) or
// one whose text changed since it was applied.
[[nodiscard]] asio::awaitable<migrate_report> async_migrate(connection& conn, const std::vector<migration>& all,
                                                            migrate_options options = {});

// What `migrate --status` reports: the embedded migrations against the recorded ones.
struct migration_status {
  std::vector<std::string> applied;  // in this binary and recorded, in order
  std::vector<std::string> pending;  // in this binary, not recorded yet
  std::vector<std::string> unknown;  // recorded, not in this binary: a newer dispatcher migrated
  std::vector<std::string> changed;  // recorded with another checksum: edited after it was applied
};

// Reads the record without changing anything (no lock: a concurrent migrate may
// make it stale at once). Every migration is pending when nothing was recorded.
[[nodiscard]] asio::awaitable<migration_status> async_migration_status(connection& conn,
                                                                       const std::vector<migration>& all);

// Names recorded as applied, in order (empty if the schema was never migrated).
[[nodiscard]] asio::awaitable<std::vector<std::string>> async_applied_migrations(connection& conn);

}  // namespace outbox::db

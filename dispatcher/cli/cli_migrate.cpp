// `dispatcher migrate`: apply the embedded schema migrations, or report them.
#include <iostream>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/ops/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* migrate_help = R"(usage: dispatcher migrate [--status]

Applies pending schema migrations in order, each once, recording them in
outbox_schema_migrations. Safe to run repeatedly (a no-op when up to date) and
concurrently (an advisory lock serializes migrators). Refuses a database that
was migrated by a newer dispatcher.

  --status   list applied and pending migrations; change nothing. Exit code:
             0 up to date, 3 migrations are pending (run `dispatcher migrate`),
             1 the database records migrations this dispatcher does not know
             or whose text changed (`migrate` would refuse it)
)";

int print_status(const db::migration_status& s) {
  for (const auto& name : s.applied) std::cout << "applied  " << name << "\n";
  for (const auto& name : s.pending) std::cout << "pending  " << name << "\n";
  // Recorded names come from the database: escaped for the terminal.
  for (const auto& name : s.unknown)
    std::cout << "unknown  " << terminal_text(name) << " (applied by a newer dispatcher)\n";
  for (const auto& name : s.changed)
    std::cout << "changed  " << terminal_text(name) << " (edited after it was applied)\n";
  std::cout << s.applied.size() << " applied, " << s.pending.size() << " pending";
  if (!s.unknown.empty() || !s.changed.empty()) {
    std::cout << ", " << s.unknown.size() << " unknown, " << s.changed.size()
              << " changed: `dispatcher migrate` refuses this database (upgrade the dispatcher)\n";
    return exit_failure;
  }
  if (!s.pending.empty()) {
    std::cout << ": run `dispatcher migrate`\n";
    return exit_pending;
  }
  std::cout << ": up to date\n";
  return exit_ok;
}

boost::asio::awaitable<int> async_migrate_or_report(db::connection& conn, bool status_only) {
  const auto& all = db::embedded_migrations();
  if (status_only) co_return print_status(co_await db::async_migration_status(conn, all));
  const auto report = co_await db::async_migrate(conn, all);
  for (const auto& name : report.applied) std::cout << "applied " << name << "\n";
  std::cout << "schema up to date: " << report.applied.size() << " applied now, " << report.already_applied.size()
            << " already applied\n";
  co_return exit_ok;
}

}  // namespace

int migrate_command(std::span<const std::string> args) {
  bool status_only = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << migrate_help;
      return exit_ok;
    }
    if (a == "--status") {
      status_only = true;
      continue;
    }
    std::cerr << "dispatcher migrate: unknown option '" << a << "'\n" << migrate_help;
    return exit_usage;
  }
  // No lock_timeout: a migration waits for its locks (its statements' own limit is 60 s).
  return with_database(database_conninfo(), session_options{.lock_timeout = {}, .check_schema = false},
                       [status_only](db::connection& conn) { return async_migrate_or_report(conn, status_only); });
}

}  // namespace outbox::cli

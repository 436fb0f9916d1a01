#pragma once
// The `dispatcher` command line: one subcommand per on-call or deploy task.
#include <chrono>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"
#include "dispatcher/config/config.hpp"

namespace outbox::cli {

// Exit codes shared by every subcommand.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // the task failed (database down, migration failed...)
inline constexpr int exit_usage = 2;    // bad arguments or configuration
inline constexpr int exit_pending = 3;  // `migrate --status`: migrations are pending

// Runs `dispatcher <args...>`; returns the process exit code. Never throws.
[[nodiscard]] int main(std::span<const std::string> args);

// Subcommands (each in its own file); `args` excludes the subcommand name.
[[nodiscard]] int migrate_command(std::span<const std::string> args);
[[nodiscard]] int run_command(std::span<const std::string> args);
[[nodiscard]] int sweep_command(std::span<const std::string> args);
[[nodiscard]] int config_command(std::span<const std::string> args);
[[nodiscard]] int status_command(std::span<const std::string> args);
[[nodiscard]] int requeue_command(std::span<const std::string> args);
[[nodiscard]] int discard_command(std::span<const std::string> args);
[[nodiscard]] int mark_sent_command(std::span<const std::string> args);
[[nodiscard]] int inspect_command(std::span<const std::string> args);
[[nodiscard]] int prune_command(std::span<const std::string> args);
[[nodiscard]] int pause_command(std::span<const std::string> args);
[[nodiscard]] int resume_command(std::span<const std::string> args);
[[nodiscard]] int import_ledgers_command(std::span<const std::string> args);
[[nodiscard]] int wake_mode_command(std::span<const std::string> args);
[[nodiscard]] int destination_command(std::span<const std::string> args);
[[nodiscard]] int keys_command(std::span<const std::string> args);
[[nodiscard]] int forget_command(std::span<const std::string> args);

// How long an on-call statement waits for a lock another session holds (a
// migration, a long transaction) before it gives up with one clear line.
inline constexpr std::chrono::milliseconds cli_lock_timeout{5000};

struct session_options {
  std::chrono::milliseconds lock_timeout = cli_lock_timeout;  // 0: the server's setting (migrate)
  bool check_schema = true;  // refuse a database with pending migrations (not for migrate)
};

// Connects to `conninfo` (DATABASE_URL or the libpq environment when empty),
// application_name "outbox-dispatcher <command>", checks that no migration is
// pending, runs `work` on one connection and returns its exit code. A pending
// migration or a database error inside `work` throws a cli_failure naming the
// database (failure_line), which cli::main prints as one line.
[[nodiscard]] int with_database(const std::string& conninfo,
                                std::function<boost::asio::awaitable<int>(db::connection&)> work);
[[nodiscard]] int with_database(const std::string& conninfo, session_options options,
                                std::function<boost::asio::awaitable<int>(db::connection&)> work);

// A failure already worded for on-call: cli::main prints "dispatcher <command>: error: <what()>".
class cli_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The one line on-call reads for a database failure in `database` (`"crm" on
// 10.0.0.5:5432`, or empty when unknown), instead of the raw SQL error: a missing
// or old schema ("run `dispatcher migrate`"), a lock timeout, a cancelled or
// timed-out statement, a lost connection. Server text is escaped.
[[nodiscard]] std::string failure_line(const db::error& e, std::string_view database);

// Who ran an on-call command, for the attempts log and pauses: `--operator NAME`,
// else OUTBOX_OPERATOR, else $USER; "@host" is added when the name has no '@'.
// "unknown@host" when none is set.
[[nodiscard]] std::string operator_name();

// The environment for load_config: the process environment without the
// variables only the command line reads (OUTBOX_OPERATOR).
[[nodiscard]] environment cli_environment();

// Connection string from DATABASE_URL, or empty for the libpq environment (PGHOST...).
[[nodiscard]] std::string database_conninfo();

}  // namespace outbox::cli

#pragma once
// The `dispatcher` command line: one subcommand per on-call or deploy task.
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"

namespace outbox::cli {

// Exit codes shared by every subcommand.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // the task failed (database down, migration failed...)
inline constexpr int exit_usage = 2;    // bad arguments or configuration

// Runs `dispatcher <args...>`; returns the process exit code. Never throws.
[[nodiscard]] int main(std::span<const std::string> args);

// Subcommands (each in its own file); `args` excludes the subcommand name.
[[nodiscard]] int migrate_command(std::span<const std::string> args);
[[nodiscard]] int run_command(std::span<const std::string> args);
[[nodiscard]] int sweep_command(std::span<const std::string> args);
[[nodiscard]] int config_command(std::span<const std::string> args);
[[nodiscard]] int status_command(std::span<const std::string> args);
[[nodiscard]] int requeue_command(std::span<const std::string> args);
[[nodiscard]] int inspect_command(std::span<const std::string> args);
[[nodiscard]] int prune_command(std::span<const std::string> args);
[[nodiscard]] int pause_command(std::span<const std::string> args);
[[nodiscard]] int resume_command(std::span<const std::string> args);
[[nodiscard]] int import_ledgers_command(std::span<const std::string> args);
[[nodiscard]] int wake_mode_command(std::span<const std::string> args);

// Connects to `conninfo` (DATABASE_URL or the libpq environment when empty),
// runs `work` on one connection and returns its exit code. db errors throw.
[[nodiscard]] int with_database(const std::string& conninfo,
                                std::function<boost::asio::awaitable<int>(db::connection&)> work);

// Who ran an on-call command, for the attempts log: $USER@host.
[[nodiscard]] std::string operator_name();

// Connection string from DATABASE_URL, or empty for the libpq environment (PGHOST...).
[[nodiscard]] std::string database_conninfo();

}  // namespace outbox::cli

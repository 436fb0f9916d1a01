#pragma once
// The `dispatcher` command line: one subcommand per on-call or deploy task.
#include <span>
#include <string>
#include <string_view>

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

// Connection string from DATABASE_URL, or empty for the libpq environment (PGHOST...).
[[nodiscard]] std::string database_conninfo();

}  // namespace outbox::cli

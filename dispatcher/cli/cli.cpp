#include "dispatcher/cli/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "db/migrations.hpp"
#include "db/operations_store.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/ops/version.hpp"

namespace outbox::cli {
namespace {

struct subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(std::span<const std::string>);
  bool audited = false;  // records who ran it: takes --operator
};

constexpr subcommand subcommands[] = {
    {"run", "run the dispatcher until SIGTERM/SIGINT", &run_command},
    {"migrate", "apply pending schema migrations; --status lists them (exit 3 when some are pending)",
     &migrate_command},
    {"sweep", "reset rows whose lease expired (stuck in sending); --dry-run to look first", &sweep_command},
    {"config", "validate the configuration and print it with secrets masked (--json)", &config_command},
    {"status", "counts by state and destination, oldest due row, expired leases, pauses", &status_command},
    {"inspect", "one row (by id, --lead or --key) and its attempts log", &inspect_command, true},
    {"requeue", "move dead (or held) rows back to pending; --dry-run to look first", &requeue_command, true},
    {"discard", "give up on pending, held or dead rows (they become dead, never sent); --reason", &discard_command,
     true},
    {"mark-sent", "record rows as sent without sending (the provider has them); --reason", &mark_sent_command, true},
    {"pause", "stop sending to a destination (all dispatchers)", &pause_command, true},
    {"resume", "resume a paused destination; its waiting rows become due now", &resume_command, true},
    {"prune", "delete (or archive) old sent or dead rows, and old archived rows", &prune_command},
    {"forget", "erase a lead's personal data from every row, and send nothing more of it", &forget_command, true},
    {"import-ledgers", "record the CRM's JSON sent-ledgers as sent rows; --dry-run to look first",
     &import_ledgers_command},
    {"wake-mode", "show or switch how inserts wake dispatchers: always, adaptive or off", &wake_mode_command, true},
    {"destination", "create, change, list or remove destinations kept in the database", &destination_command, true},
    {"keys", "generate and publish the key that seals destination secrets in the database", &keys_command},
};

constexpr std::string_view operator_var = "OUTBOX_OPERATOR";

std::string_view current_command = "cli";    // for application_name
std::optional<std::string> operator_option;  // --operator NAME

void print_usage(std::ostream& out) {
  out << "usage: dispatcher <command> [options]\n       dispatcher --version\n\ncommands:\n";
  std::size_t width = 0;
  for (const auto& c : subcommands) width = std::max(width, c.name.size());
  for (const auto& c : subcommands)
    out << "  " << c.name << std::string(width + 2 - c.name.size(), ' ') << c.summary << "\n";
  out << "\nRun `dispatcher <command> --help` (or `dispatcher help <command>`) for a command's options.\n"
         "The database comes from DATABASE_URL, else the libpq environment (PGHOST, PGDATABASE, ...).\n"
         "Commands that change rows or pauses record who ran them: --operator NAME (any of them), else\n"
         "OUTBOX_OPERATOR, else $USER, with @host added (inside docker/kubectl exec USER is often unset).\n";
}

// Why an operator name cannot be recorded, or empty when it can.
std::string operator_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > 100) return "is longer than 100 characters";
  if (terminal_text(name) != name) return "contains control characters";
  return {};
}

// Takes `--operator NAME` / `--operator=NAME` out of an audited command's
// arguments; an exit code when they are unusable.
std::optional<int> take_operator(std::vector<std::string>& args, std::string_view command) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::optional<std::string> value;
    if (args[i] == "--operator" && i + 1 < args.size()) {
      value = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else if (args[i].starts_with("--operator=")) {
      value = args[i].substr(11);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (args[i] == "--operator") {
      std::cerr << "dispatcher " << command << ": --operator needs a name\n";
      return exit_usage;
    } else {
      continue;
    }
    if (const auto problem = operator_problem(*value); !problem.empty()) {
      std::cerr << "dispatcher " << command << ": --operator " << problem << "\n";
      return exit_usage;
    }
    operator_option = std::move(value);
    --i;
  }
  const char* env = std::getenv(operator_var.data());
  if (!operator_option && env && *env) {
    if (const auto problem = operator_problem(env); !problem.empty()) {
      std::cerr << "dispatcher " << command << ": " << operator_var << " " << problem << "\n";
      return exit_usage;
    }
  }
  return std::nullopt;
}

int run_subcommand(const subcommand& c, std::span<const std::string> args) {
  current_command = c.name;
  std::vector<std::string> own(args.begin(), args.end());
  if (c.audited) {
    if (const auto done = take_operator(own, c.name)) return *done;
  }
  try {
    return c.run(own);
  } catch (const cli_failure& e) {
    std::cerr << "dispatcher " << c.name << ": error: " << e.what() << "\n";
  } catch (const db::error& e) {
    std::cerr << "dispatcher " << c.name << ": error: " << failure_line(e, "") << "\n";
  } catch (const std::exception& e) {
    // Errors can quote row data: escaped for the terminal.
    std::cerr << "dispatcher " << c.name << ": error: " << terminal_text(e.what()) << "\n";
  }
  return exit_failure;
}

bool schema_missing(const std::string& sqlstate) {
  // undefined_table, undefined_function, undefined_column, undefined_object, invalid_schema_name
  return sqlstate == "42P01" || sqlstate == "42883" || sqlstate == "42703" || sqlstate == "42704" ||
         sqlstate == "3F000";
}

// A database whose schema lacks migrations this binary's statements rely on.
std::string outdated_schema_line(const db::migration_status& s, std::string_view database) {
  const std::size_t total = s.applied.size() + s.pending.size();
  const std::string in = database.empty() ? "" : " in database " + terminal_text(database);
  return "the outbox schema is missing or old" + in + " (" + std::to_string(s.pending.size()) + " of " +
         std::to_string(total) + " migrations pending, first " + s.pending.front() + "): run `dispatcher migrate`";
}

// with_database's coroutine. Arguments by value: the frame owns all it reads.
boost::asio::awaitable<int> async_with_database(boost::asio::any_io_executor ex, std::string conninfo,
                                                session_options options,
                                                std::function<boost::asio::awaitable<int>(db::connection&)> work) {
  using namespace std::chrono_literals;
  db::connect_options connect;
  connect.application_name = "outbox-dispatcher " + std::string(current_command);
  auto conn = co_await db::connection::async_connect(std::move(ex), std::move(conninfo), 10s, connect);
  std::optional<db::error> failure;
  db::migration_status schema;
  try {
    if (options.lock_timeout.count() > 0) co_await db::async_set_lock_timeout(conn, options.lock_timeout);
    if (options.check_schema) schema = co_await db::async_migration_status(conn, db::embedded_migrations());
    if (schema.pending.empty()) co_return co_await work(conn);
  } catch (const db::error& e) {
    failure = e;  // no co_await inside a handler
  }
  // Which database it was: a missing schema often means the wrong database.
  std::string where;
  if (conn.is_open()) {
    if (auto label = co_await db::async_try(db::async_database_label(conn))) where = std::move(*label);
  }
  if (failure) throw cli_failure(failure_line(*failure, where));
  throw cli_failure(outdated_schema_line(schema, where));
}

}  // namespace

std::string failure_line(const db::error& e, std::string_view database) {
  const std::string in = database.empty() ? "" : " in database " + terminal_text(database);
  const std::string said = terminal_text(e.what(), 300);
  if (e.kind() == db::error_kind::connect) return "cannot connect to the database: " + said;
  if (e.kind() == db::error_kind::timeout) {
    return "the database did not answer in time (" + said + "); it may be overloaded or waiting for a lock";
  }
  if (e.kind() == db::error_kind::connection) return "lost the connection to the database: " + said;
  if (schema_missing(e.sqlstate())) return "the outbox schema is missing or old" + in + ": run `dispatcher migrate`";
  if (e.sqlstate() == "55P03") {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(cli_lock_timeout).count();
    return "gave up after " + std::to_string(seconds) + " s waiting for a lock held by another session" + in +
           " (a migration or a long transaction?); nothing was changed by that statement, try again";
  }
  if (e.sqlstate() == "57014") return "the statement was cancelled by the server" + in + " (statement_timeout?)";
  return "database error" + in + ": " + said;
}

environment cli_environment() {
  auto env = process_environment();
  env.erase(std::string(operator_var));
  return env;
}

std::string database_conninfo() {
  // The same source `run` uses (environment, then OUTBOX_CONFIG_FILE). On-call
  // commands must work even when some unrelated setting is invalid, so fall back.
  try {
    return load_config(cli_environment()).database_url;
  } catch (const config_error&) {
  }
  const char* url = std::getenv("DATABASE_URL");
  return url ? url : "";
}

int with_database(const std::string& conninfo, std::function<boost::asio::awaitable<int>(db::connection&)> work) {
  return with_database(conninfo, session_options{}, std::move(work));
}

int with_database(const std::string& conninfo, session_options options,
                  std::function<boost::asio::awaitable<int>(db::connection&)> work) {
  boost::asio::io_context io;
  auto fut = boost::asio::co_spawn(io, async_with_database(io.get_executor(), conninfo, options, std::move(work)),
                                   boost::asio::use_future);
  io.run();
  return fut.get();
}

std::string operator_name() {
  std::string who;
  if (operator_option) {
    who = *operator_option;
  } else if (const char* env = std::getenv(operator_var.data()); env && *env) {
    who = env;
  } else if (const char* user = std::getenv("USER"); user && *user) {
    who = user;
  } else {
    who = "unknown";
  }
  if (who.find('@') != std::string::npos) return who;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return who + "@" + (host[0] ? host : "localhost");
}

int main(std::span<const std::string> args) {
  // `dispatcher help status` is `dispatcher status --help`.
  if (args.size() == 2 && args[0] == "help") {
    for (const auto& c : subcommands) {
      if (c.name == args[1]) {
        const std::vector<std::string> help{"--help"};
        return run_subcommand(c, help);
      }
    }
    std::cerr << "dispatcher help: unknown command '" << args[1] << "'\n\n";
    print_usage(std::cerr);
    return exit_usage;
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? exit_usage : exit_ok;
  }
  if (args[0] == "--version") {
    std::cout << "dispatcher " << version_line() << "\n";
    return exit_ok;
  }
  for (const auto& c : subcommands) {
    if (c.name == args[0]) return run_subcommand(c, args.subspan(1));
  }
  std::cerr << "dispatcher: unknown command '" << args[0] << "'\n\n";
  print_usage(std::cerr);
  return exit_usage;
}

}  // namespace outbox::cli

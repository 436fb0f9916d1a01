// `dispatcher migrate`: apply the embedded schema migrations.
#include <algorithm>
#include <chrono>
#include <iostream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "dispatcher/cli.hpp"

namespace outbox::cli {
namespace {

constexpr const char* help = R"(usage: dispatcher migrate [--status]

Applies pending schema migrations in order, each once, recording them in
outbox_schema_migrations. Safe to run repeatedly (a no-op when up to date) and
concurrently (an advisory lock serializes migrators). Refuses a database that
was migrated by a newer dispatcher.

  --status   list applied and pending migrations; change nothing
)";

}  // namespace

int migrate_command(std::span<const std::string> args) {
  bool status_only = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << help;
      return exit_ok;
    }
    if (a == "--status") {
      status_only = true;
      continue;
    }
    std::cerr << "dispatcher migrate: unknown option '" << a << "'\n" << help;
    return exit_usage;
  }

  boost::asio::io_context io;
  auto work = [&]() -> boost::asio::awaitable<int> {
    using namespace std::chrono_literals;
    auto conn = co_await db::connection::async_connect(io.get_executor(), database_conninfo(), 10s);
    const auto& all = db::embedded_migrations();
    if (status_only) {
      const auto applied = co_await db::async_applied_migrations(conn);
      for (const auto& m : all) {
        const bool done = std::find(applied.begin(), applied.end(), m.name) != applied.end();
        std::cout << (done ? "applied  " : "pending  ") << m.name << "\n";
      }
      co_return exit_ok;
    }
    const auto report = co_await db::async_migrate(conn, all);
    for (const auto& name : report.applied) std::cout << "applied " << name << "\n";
    std::cout << "schema up to date: " << report.applied.size() << " applied now, " << report.already_applied.size()
              << " already applied\n";
    co_return exit_ok;
  };
  auto result = boost::asio::co_spawn(io, work(), boost::asio::use_future);
  io.run();
  return result.get();
}

}  // namespace outbox::cli

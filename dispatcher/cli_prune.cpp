// `dispatcher prune`: keep the hot table small by removing old sent rows.
#include <iostream>

#include "db/operations_store.hpp"
#include "dispatcher/cli.hpp"
#include "dispatcher/cli_args.hpp"
#include "dispatcher/duration_arg.hpp"

namespace outbox::cli {
namespace {

constexpr const char* help = R"(usage: dispatcher prune --older-than DURATION [--archive] [--batch N] [--dry-run]

Deletes `sent` rows (and their attempts log) whose sent_at is older than
DURATION (e.g. 30d, 12h, 1y; at most 10 years), in batches of N rows
(default 1000), each batch its own short transaction so no long locks are
held. With --archive the rows are copied to event_delivery_archive first.
Pending, sending, dead and held rows are never pruned. --dry-run counts what
would go.
)";

}  // namespace

int prune_command(std::span<const std::string> args) {
  arg_reader r(args);
  db::prune_request req;
  bool have_age = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << help;
      return exit_ok;
    }
    if (r.flag("--archive")) {
      req.archive = true;
    } else if (r.flag("--dry-run")) {
      req.dry_run = true;
    } else if (auto v = r.option("--older-than")) {
      const auto d = read_duration_arg(*v);
      if (!d.value) {
        std::cerr << "dispatcher prune: --older-than: " << d.problem << "\n";
        return exit_usage;
      }
      req.older_than = *d.value;
      have_age = true;
    } else if (auto b = r.option("--batch")) {
      try {
        req.batch = std::stoi(*b);
      } catch (const std::exception&) {
        req.batch = 0;
      }
      if (req.batch < 1 || req.batch > 100000) {
        std::cerr << "dispatcher prune: --batch must be 1..100000\n";
        return exit_usage;
      }
    } else {
      std::cerr << "dispatcher prune: unknown or incomplete option '" << (r.done() ? "" : r.current()) << "'\n"
                << help;
      return exit_usage;
    }
  }
  if (!have_age) {
    std::cerr << "dispatcher prune: --older-than is required\n" << help;
    return exit_usage;
  }
  return with_database(database_conninfo(), [&](db::connection& conn) -> boost::asio::awaitable<int> {
    const auto n = co_await db::async_prune(conn, req);
    std::cout << (req.dry_run ? "would prune " : (req.archive ? "archived and pruned " : "pruned ")) << n
              << " sent row(s)" << (req.dry_run ? " (dry run: nothing changed)" : "") << "\n";
    co_return exit_ok;
  });
}

}  // namespace outbox::cli

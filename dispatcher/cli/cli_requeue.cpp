// `dispatcher requeue`: give dead (or held) rows another chance.
#include <iostream>
#include <string>

#include "db/operations_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/cli/cli_row_filter.hpp"

namespace outbox::cli {
namespace {

const std::string requeue_help =
    std::string(R"(usage: dispatcher requeue FILTER... [--state dead|held|both] [--dry-run] [--json]

Moves matching dead (and held) rows back to pending, due now, with a fresh
attempt budget. The idempotency key and payload never change, so the provider
still deduplicates a row that had in fact arrived. Each requeue is recorded
in the attempts log. At least one filter is required (use --all for all).
Rows another session holds are skipped.

)") +
    row_filter_help + R"(  --all                  every dead/held row
options:
  --state dead|held|both which states to requeue (default both)
  --dry-run              list what would be requeued; change nothing
  --json                 print the rows as JSON
  --operator NAME        who is requeueing, for the attempts log (else OUTBOX_OPERATOR, else $USER)
)";

boost::asio::awaitable<int> async_requeue_rows(db::connection& conn, row_filter_args a) {
  if (!co_await async_resolve_times(conn, a, "requeue")) co_return exit_usage;
  const auto rows = co_await db::async_requeue(conn, a.filter, operator_name());
  print_changed_rows(rows, a.json, a.filter.dry_run, "requeued", "requeue");
  co_await async_report_erased(conn, a, "requeue");
  co_return exit_ok;
}

}  // namespace

int requeue_command(std::span<const std::string> args) {
  arg_reader r(args);
  row_filter_args a;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << requeue_help;
      return exit_ok;
    }
    if (r.flag("--all")) {
      a.any_filter = true;
      continue;
    }
    const auto read = read_row_filter_option(r, a, "requeue", {"dead", "held"});
    if (read == option_read::bad) return exit_usage;
    if (read == option_read::not_mine) {
      std::cerr << "dispatcher requeue: unknown or incomplete option '" << (r.done() ? "" : r.current()) << "'\n"
                << requeue_help;
      return exit_usage;
    }
  }
  if (!a.any_filter) {
    std::cerr << "dispatcher requeue: give at least one filter (or --all)\n" << requeue_help;
    return exit_usage;
  }
  return with_database(database_conninfo(),
                       [a = std::move(a)](db::connection& conn) { return async_requeue_rows(conn, a); });
}

}  // namespace outbox::cli

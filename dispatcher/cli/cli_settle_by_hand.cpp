#include "dispatcher/cli/cli_settle_by_hand.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/cli/cli_row_filter.hpp"

namespace outbox::cli {
namespace {

constexpr std::size_t max_reason = 1000;

std::string help_of(const settle_by_hand_command& c) {
  return "usage: dispatcher " + std::string(c.name) +
         " FILTER... --reason TEXT [--state pending,held,dead] [--dry-run] [--json]\n\n" + std::string(c.about) + "\n" +
         row_filter_help +
         "options:\n"
         "  --reason TEXT          why (required): kept in the attempts log with who ran it\n"
         "  --state S[,S]          which states (pending, held, dead; default all three).\n"
         "                         sending rows are never touched (see `dispatcher sweep`)\n"
         "  --dry-run              list what would change; change nothing\n"
         "  --json                 print the rows as JSON\n"
         "  --operator NAME        who decided, for the attempts log (else OUTBOX_OPERATOR, else $USER)\n";
}

// Rows named by --id that did not change: sending, sent, or no such row.
void report_untouched_ids(const row_filter_args& a, const std::vector<db::changed_row>& rows, std::string_view name) {
  if (a.filter.ids.empty() || a.filter.limit) return;
  std::set<std::int64_t> wanted(a.filter.ids.begin(), a.filter.ids.end());
  for (const auto& row : rows) wanted.erase(row.id);
  if (wanted.empty()) return;
  std::cerr << "dispatcher " << name << ": " << wanted.size()
            << " --id row(s) did not match (sending, already sent, another state than --state, another filter, "
               "or no such row): see `dispatcher inspect`\n";
}

boost::asio::awaitable<int> async_settle_rows_by_hand(db::connection& conn, settle_by_hand_command c, row_filter_args a,
                                                      std::string reason) {
  if (!co_await async_resolve_times(conn, a, c.name)) co_return exit_usage;
  const auto rows = co_await db::async_settle_by_hand(conn, a.filter, c.how, operator_name(), reason);
  print_changed_rows(rows, a.json, a.filter.dry_run, c.done, c.would);
  if (c.how == db::manual_settlement::mark_sent) co_await async_report_erased(conn, a, c.name);
  report_untouched_ids(a, rows, c.name);
  co_return exit_ok;
}

}  // namespace

int run_settle_by_hand(const settle_by_hand_command& c, std::span<const std::string> args) {
  arg_reader r(args);
  row_filter_args a;
  a.filter.states = {"pending", "held", "dead"};
  std::optional<std::string> reason;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << help_of(c);
      return exit_ok;
    }
    if (auto v = r.option("--reason")) {
      reason = *v;
      continue;
    }
    const auto read = read_row_filter_option(r, a, c.name, {"pending", "held", "dead"});
    if (read == option_read::bad) return exit_usage;
    if (read == option_read::not_mine) {
      std::cerr << "dispatcher " << c.name << ": unknown or incomplete option '" << (r.done() ? "" : r.current())
                << "'\n"
                << help_of(c);
      return exit_usage;
    }
  }
  if (!a.any_filter) {
    std::cerr << "dispatcher " << c.name << ": give at least one filter (--id N, --lead N, --provider NAME...)\n";
    return exit_usage;
  }
  if (!reason || reason->find_first_not_of(" \t") == std::string::npos || reason->size() > max_reason) {
    std::cerr << "dispatcher " << c.name << ": --reason TEXT is required (why, up to " << max_reason
              << " characters): it is kept in the attempts log\n";
    return exit_usage;
  }
  return with_database(database_conninfo(), [c, a = std::move(a), reason = std::move(*reason)](db::connection& conn) {
    return async_settle_rows_by_hand(conn, c, a, reason);
  });
}

}  // namespace outbox::cli

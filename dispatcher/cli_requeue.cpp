// `dispatcher requeue`: give dead (or held) rows another chance.
#include <charconv>
#include <iomanip>
#include <iostream>

#include "db/operations_store.hpp"
#include "dispatcher/cli.hpp"
#include "dispatcher/cli_args.hpp"
#include "dispatcher/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* help = R"(usage: dispatcher requeue FILTER... [--state dead|held|both] [--dry-run] [--json]

Moves matching dead (and held) rows back to pending, due now, with a fresh
attempt budget. The idempotency key and payload never change, so the provider
still deduplicates a row that had in fact arrived. Each requeue is recorded
in the attempts log. At least one filter is required (use --all for all).

filters (combined with AND):
  --id N                 this row (repeatable)
  --provider NAME        e.g. meta, tiktok, webhook
  --destination NAME
  --error-contains TEXT  last_error contains TEXT (case-sensitive)
  --since TIME           became dead/held at or after TIME (e.g. '2026-11-30 08:00+00')
  --until TIME           ... before TIME
  --all                  every dead/held row
options:
  --state dead|held|both which states to requeue (default both)
  --dry-run              list what would be requeued; change nothing
  --json                 print the rows as JSON
)";

struct requeue_args {
  db::requeue_filter filter;
  bool json = false;
};

// One option into `a`; false (after printing why) when it is not usable.
bool read_option(arg_reader& r, requeue_args& a, bool& any_filter) {
  db::requeue_filter& f = a.filter;
  if (r.flag("--dry-run")) {
    f.dry_run = true;
  } else if (r.flag("--json")) {
    a.json = true;
  } else if (r.flag("--all")) {
    any_filter = true;
  } else if (auto v = r.option("--id")) {
    std::int64_t id = 0;
    const auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), id);
    if (ec != std::errc{} || p != v->data() + v->size()) {
      std::cerr << "dispatcher requeue: --id: not a row id: '" << *v << "'\n";
      return false;
    }
    f.ids.push_back(id);
    any_filter = true;
  } else if (auto p = r.option("--provider")) {
    f.provider = *p, any_filter = true;
  } else if (auto d = r.option("--destination")) {
    f.destination = *d, any_filter = true;
  } else if (auto e = r.option("--error-contains")) {
    f.error_contains = *e, any_filter = true;
  } else if (auto s = r.option("--since")) {
    f.since = *s, any_filter = true;
  } else if (auto u = r.option("--until")) {
    f.until = *u, any_filter = true;
  } else if (auto st = r.option("--state")) {
    if (*st == "both") {
      f.states = {"dead", "held"};
    } else if (*st == "dead" || *st == "held") {
      f.states = {*st};
    } else {
      std::cerr << "dispatcher requeue: --state must be dead, held or both\n";
      return false;
    }
  } else {
    std::cerr << "dispatcher requeue: unknown or incomplete option '" << (r.done() ? "" : r.current()) << "'\n"
              << help;
    return false;
  }
  return true;
}

void print_rows(const std::vector<db::requeued_row>& rows, bool json, bool dry_run) {
  if (json) {
    auto out = nlohmann::json::array();
    for (const auto& row : rows) {
      out.push_back({{"id", row.id}, {"provider", row.provider}, {"destination", row.destination},
                     {"event_name", row.event_name}, {"previous_state", row.previous_state},
                     {"last_error", row.last_error}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  // Every text column is CRM or provider text: escaped for the terminal.
  for (const auto& row : rows) {
    std::cout << std::left << std::setw(10) << row.id << std::setw(12) << terminal_text(row.provider) << std::setw(14)
              << terminal_text(row.destination) << std::setw(14) << terminal_text(row.event_name) << std::setw(6)
              << terminal_text(row.previous_state) << "  " << terminal_text(row.last_error, 80) << "\n";
  }
  std::cout << (dry_run ? "would requeue " : "requeued ") << rows.size() << " row(s)"
            << (dry_run ? " (dry run: nothing changed)" : "") << "\n";
}

}  // namespace

int requeue_command(std::span<const std::string> args) {
  arg_reader r(args);
  requeue_args a;
  bool any_filter = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << help;
      return exit_ok;
    }
    if (!read_option(r, a, any_filter)) return exit_usage;
    if (r.missing_value()) {
      std::cerr << "dispatcher requeue: an option is missing its value\n";
      return exit_usage;
    }
  }
  if (!any_filter) {
    std::cerr << "dispatcher requeue: give at least one filter (or --all)\n" << help;
    return exit_usage;
  }
  return with_database(database_conninfo(), [&](db::connection& conn) -> boost::asio::awaitable<int> {
    const auto rows = co_await db::async_requeue(conn, a.filter, operator_name());
    print_rows(rows, a.json, a.filter.dry_run);
    co_return exit_ok;
  });
}

}  // namespace outbox::cli

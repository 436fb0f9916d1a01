// `dispatcher prune`: keep the tables small by removing old sent and dead rows.
#include <charconv>
#include <iostream>

#include "db/operations_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/cli/duration_arg.hpp"

namespace outbox::cli {
namespace {

constexpr const char* prune_help =
    R"(usage: dispatcher prune --older-than DURATION [--state sent|dead] [--archive] [--batch N] [--dry-run]
       dispatcher prune --archive-older-than DURATION [--dry-run]

Deletes `sent` rows (and their attempts log) whose sent_at is older than
DURATION, or with --state dead the `dead` rows that became dead (updated_at)
longer ago than DURATION. DURATION has a unit: 30d, 12h, 1y (at most 10
years). Works in batches of N rows (default 1000), each batch its own short
transaction so no long locks are held. With --archive the rows are copied to
event_delivery_archive first. Pending, sending and held rows are never
pruned.

--archive-older-than DURATION deletes rows archived (archived_at) longer ago
than DURATION from event_delivery_archive. Both can be given in one run.
--dry-run counts what would go.
)";

struct prune_args {
  db::prune_request req;
  std::optional<std::chrono::seconds> rows_older_than;
  std::optional<std::chrono::seconds> archive_older_than;
};

// A positive duration for `option`; nullopt after printing why.
std::optional<std::chrono::seconds> read_age(const std::string& text, std::string_view option) {
  const auto d = read_duration_arg(text, zero_duration::refused);
  if (!d.value) std::cerr << "dispatcher prune: " << option << ": " << d.problem << "\n";
  return d.value;
}

// One option into `a`; false after printing why it is unusable.
bool read_option(arg_reader& r, prune_args& a) {
  if (r.flag("--archive")) {
    a.req.archive = true;
  } else if (r.flag("--dry-run")) {
    a.req.dry_run = true;
  } else if (auto v = r.option("--older-than")) {
    a.rows_older_than = read_age(*v, "--older-than");
    return a.rows_older_than.has_value();
  } else if (auto w = r.option("--archive-older-than")) {
    a.archive_older_than = read_age(*w, "--archive-older-than");
    return a.archive_older_than.has_value();
  } else if (auto s = r.option("--state")) {
    if (*s != "sent" && *s != "dead") {
      std::cerr << "dispatcher prune: --state must be sent or dead (held rows wait for a decision: see "
                   "`dispatcher discard`)\n";
      return false;
    }
    a.req.state = *s == "sent" ? db::prune_state::sent : db::prune_state::dead;
  } else if (auto b = r.option("--batch")) {
    // The whole text is the number: "10abc" is refused, not read as 10.
    int batch = 0;
    const auto [end, ec] = std::from_chars(b->data(), b->data() + b->size(), batch);
    a.req.batch = ec == std::errc{} && end == b->data() + b->size() ? batch : 0;
    if (a.req.batch < 1 || a.req.batch > 100000) {
      std::cerr << "dispatcher prune: --batch must be a whole number from 1 to 100000 (got '" << *b << "')\n";
      return false;
    }
  } else {
    std::cerr << "dispatcher prune: unknown or incomplete option '" << (r.done() ? "" : r.current()) << "'\n"
              << prune_help;
    return false;
  }
  return true;
}

boost::asio::awaitable<int> async_prune_rows(db::connection& conn, prune_args a) {
  const bool dry = a.req.dry_run;
  const char* dry_note = dry ? " (dry run: nothing changed)" : "";
  if (a.rows_older_than) {
    a.req.older_than = *a.rows_older_than;
    const auto n = co_await db::async_prune(conn, a.req);
    const char* state = a.req.state == db::prune_state::sent ? "sent" : "dead";
    std::cout << (dry ? "would prune " : (a.req.archive ? "archived and pruned " : "pruned ")) << n << " " << state
              << " row(s)" << dry_note << "\n";
  }
  if (a.archive_older_than) {
    const auto n = co_await db::async_prune_archive(conn, *a.archive_older_than, dry);
    std::cout << (dry ? "would delete " : "deleted ") << n << " archived row(s)" << dry_note << "\n";
  }
  co_return exit_ok;
}

}  // namespace

int prune_command(std::span<const std::string> args) {
  arg_reader r(args);
  prune_args a;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << prune_help;
      return exit_ok;
    }
    if (!read_option(r, a)) return exit_usage;
  }
  if (!a.rows_older_than && !a.archive_older_than) {
    std::cerr << "dispatcher prune: --older-than (or --archive-older-than) is required\n" << prune_help;
    return exit_usage;
  }
  return with_database(database_conninfo(), [a](db::connection& conn) { return async_prune_rows(conn, a); });
}

}  // namespace outbox::cli

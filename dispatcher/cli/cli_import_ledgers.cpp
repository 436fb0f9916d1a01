// `dispatcher import-ledgers`: moving off the CRM's JSON "already sent" ledgers.
#include <algorithm>
#include <charconv>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "db/ledger_import.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/config/config.hpp"

namespace outbox::cli {
namespace {

constexpr const char* import_ledgers_help = R"(usage: dispatcher import-ledgers [--table NAME] [--id-column NAME]
           [--ledger COLUMN=PROVIDER]... [--destination NAME] [--batch-size N] [--dry-run] [--json]

Records the CRM's JSON "already sent" ledgers as `sent` event_delivery rows, so
events the old senders delivered are never sent again. A ledger column holds,
per lead, a JSON object {"event_name": timestamp}; each entry becomes one row:
lead_project_id = the lead's id, the column's provider, state sent, sent_at =
the timestamp, and the idempotency key enqueue_event_delivery would give it.
A row that exists for (lead, provider, event), in any state, is left as it
is, so the command is safe to run again: a second run inserts nothing.

Timestamps: ISO-8601 strings with or without a zone (none means UTC), or
epoch seconds (numbers or numeric strings; milliseconds from 1e11 up).
Entries that cannot be read are counted and listed (the first 5 per ledger)
and do not stop the import. NULL, JSON null and {} ledgers are skipped.

options:
  --table NAME              lead table or view: NAME or SCHEMA.NAME (default lead_project)
  --id-column NAME          its integer id column, becomes lead_project_id (default id)
  --ledger COLUMN=PROVIDER  a json/jsonb ledger column and its provider; repeatable;
                            giving any replaces the defaults capi_events_sent=meta,
                            tiktok_events_sent=tiktok and
                            google_events_sent=google_data_manager (Google's path for
                            new setups); an account staying on the Google Ads API
                            gives all three, the last as google_events_sent=google_ads
  --destination NAME        destination of the imported rows (default: default)
  --batch-size N            leads per transaction, 1..100000 (default 1000)
  --dry-run                 count what would be imported; change nothing
  --json                    print the summary as JSON

Names are letters, digits and _, not starting with a digit, and are used
exactly as given (case-sensitive). Exit status: 0 done (also when some entries
were unparseable: see the report), 1 database failure, 2 bad arguments or a
table/column that does not exist or has the wrong type.
)";

constexpr const char* command = "dispatcher import-ledgers";
constexpr int progress_every_batches = 100;

nlohmann::json to_json(const db::ledger_import_summary& s) {
  nlohmann::json ledgers = nlohmann::json::array();
  nlohmann::json totals = {
      {"found", 0}, {"inserted", 0}, {"already_present", 0}, {"already_present_not_sent", 0}, {"unparseable", 0}};
  for (const auto& l : s.ledgers) {
    nlohmann::json samples = nlohmann::json::array();
    for (const auto& u : l.samples) {
      samples.push_back({{"lead_id", u.lead_id},
                         {"event_name", u.event_name ? nlohmann::json(*u.event_name) : nlohmann::json(nullptr)},
                         {"value", u.value},
                         {"reason", u.reason}});
    }
    ledgers.push_back({{"column", l.column},
                       {"provider", l.provider},
                       {"found", l.found},
                       {"inserted", l.inserted},
                       {"already_present", l.already_present},
                       {"already_present_not_sent", l.present_not_sent},
                       {"unparseable", l.unparseable},
                       {"unparseable_samples", samples}});
    totals["found"] = totals["found"].get<std::int64_t>() + l.found;
    totals["inserted"] = totals["inserted"].get<std::int64_t>() + l.inserted;
    totals["already_present"] = totals["already_present"].get<std::int64_t>() + l.already_present;
    totals["already_present_not_sent"] = totals["already_present_not_sent"].get<std::int64_t>() + l.present_not_sent;
    totals["unparseable"] = totals["unparseable"].get<std::int64_t>() + l.unparseable;
  }
  return {{"table", s.table},     {"destination", s.destination},
          {"dry_run", s.dry_run}, {"leads_scanned", s.leads_scanned},
          {"batches", s.batches}, {"ledgers", ledgers},
          {"totals", totals}};
}

void print_text(const db::ledger_import_summary& s) {
  std::cout << (s.dry_run ? "dry run (nothing changed): " : "") << "scanned " << s.leads_scanned << " lead(s) of "
            << s.table << " in " << s.batches << " batch(es); destination " << s.destination << "\n\n";
  std::size_t width = 6;
  std::size_t provider_width = 8;
  for (const auto& l : s.ledgers) {
    width = std::max(width, l.column.size());
    provider_width = std::max(provider_width, l.provider.size());
  }
  const auto pw = static_cast<int>(provider_width + 2);
  std::cout << std::left << std::setw(static_cast<int>(width + 2)) << "ledger" << std::setw(pw) << "provider"
            << std::right << std::setw(10) << "found" << std::setw(14) << (s.dry_run ? "would insert" : "inserted")
            << std::setw(17) << "already present" << std::setw(13) << "unparseable"
            << "\n";
  for (const auto& l : s.ledgers) {
    std::cout << std::left << std::setw(static_cast<int>(width + 2)) << l.column << std::setw(pw) << l.provider
              << std::right << std::setw(10) << l.found << std::setw(14) << l.inserted << std::setw(17)
              << l.already_present << std::setw(13) << l.unparseable << "\n";
  }
  for (const auto& l : s.ledgers) {
    if (l.present_not_sent == 0) continue;
    std::cout << "\nnote: " << l.present_not_sent << " " << l.provider << " row(s) from " << l.column
              << " exist but are not sent (pending, sending,\n"
                 "      dead or held) although the ledger says the old sender delivered them:\n"
                 "      `dispatcher run` would send the pending ones again. See \"Rows enqueued\n"
                 "      again\" in docs/migrating_from_ledgers.md.\n";
  }
  for (const auto& l : s.ledgers) {
    if (l.unparseable == 0) continue;
    std::cout << "\nunparseable in " << l.column << " (" << l.provider << "), " << l.samples.size() << " of "
              << l.unparseable << ":\n";
    for (const auto& u : l.samples) {
      std::cout << "  lead " << u.lead_id << "  "
                << (u.event_name ? "event " + nlohmann::json(*u.event_name).dump() : std::string("whole ledger"))
                << "  value " << u.value.substr(0, 80) << (u.value.size() > 80 ? "..." : "") << ": " << u.reason
                << "\n";
    }
  }
  if (s.dry_run) std::cout << "\ndry run: nothing changed; run again without --dry-run to import\n";
}

struct import_args {
  db::ledger_import_request req;
  std::vector<db::ledger_mapping> ledgers;  // from --ledger: replace the defaults when any is given
  bool json = false;
};

// One option into `a`; false (after printing why) when it is not usable.
bool read_option(arg_reader& r, import_args& a) {
  db::ledger_import_request& req = a.req;
  if (r.flag("--dry-run")) {
    req.dry_run = true;
  } else if (r.flag("--json")) {
    a.json = true;
  } else if (auto t = r.option("--table")) {
    req.table = *t;
  } else if (auto c = r.option("--id-column")) {
    req.id_column = *c;
  } else if (auto d = r.option("--destination")) {
    req.destination = *d;
  } else if (auto l = r.option("--ledger")) {
    const auto eq = l->find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == l->size()) {
      std::cerr << command << ": --ledger wants COLUMN=PROVIDER, e.g. capi_events_sent=meta; got '" << *l << "'\n";
      return false;
    }
    a.ledgers.push_back({l->substr(0, eq), l->substr(eq + 1)});
  } else if (auto b = r.option("--batch-size")) {
    int n = 0;
    const auto [p, ec] = std::from_chars(b->data(), b->data() + b->size(), n);
    if (ec != std::errc{} || p != b->data() + b->size() || n < 1 || n > 100000) {
      std::cerr << command << ": --batch-size must be 1..100000; got '" << *b << "'\n";
      return false;
    }
    req.batch_size = n;
  } else {
    std::cerr << command << ": unknown or incomplete option '" << (r.done() ? "" : r.current()) << "'\n"
              << import_ledgers_help;
    return false;
  }
  return true;
}

// Prints every problem of `req` (all of them, not just the first); false when there is any.
bool check_request(const db::ledger_import_request& req) {
  bool bad = false;
  for (const auto& problem : db::validate(req)) {
    std::cerr << command << ": " << problem << "\n";
    bad = true;
  }
  for (const auto& l : req.ledgers) {
    if (!is_known_provider(l.provider)) {
      std::cerr << command << ": unknown provider '" << l.provider << "' for ledger column '" << l.column
                << "' (known: " << known_provider_names() << ")\n";
      bad = true;
    }
  }
  return !bad;
}

void print_progress(const db::ledger_import_progress& p) {
  if (p.batches % progress_every_batches == 0) {
    std::cerr << command << ": " << p.leads_scanned << " lead(s) scanned (up to id " << p.last_id << ")\n";
  }
}

// Imports and prints the summary; a table or column that is missing or unusable is a usage error.
boost::asio::awaitable<int> async_import_ledgers_and_report(db::connection& conn, db::ledger_import_request req,
                                                            bool json) {
  db::ledger_import_summary summary;
  std::string problem;
  try {
    summary = co_await db::async_import_ledgers(conn, req);
  } catch (const db::ledger_import_error& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    std::istringstream lines(problem);
    for (std::string line; std::getline(lines, line);) std::cerr << command << ": " << line << "\n";
    co_return exit_usage;
  }
  if (json) {
    std::cout << to_json(summary).dump(2) << "\n";
  } else {
    print_text(summary);
  }
  co_return exit_ok;
}

int run_import(const db::ledger_import_request& req, bool json) {
  return with_database(database_conninfo(),
                       [req, json](db::connection& conn) { return async_import_ledgers_and_report(conn, req, json); });
}

}  // namespace

int import_ledgers_command(std::span<const std::string> args) {
  arg_reader r(args);
  import_args a;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << import_ledgers_help;
      return exit_ok;
    }
    if (!read_option(r, a)) return exit_usage;
  }
  if (!a.ledgers.empty()) a.req.ledgers = std::move(a.ledgers);
  if (!check_request(a.req)) return exit_usage;

  a.req.on_batch = print_progress;
  return run_import(a.req, a.json);
}

}  // namespace outbox::cli

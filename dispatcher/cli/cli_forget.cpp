// `dispatcher forget`: a lead asked to be forgotten (GDPR Art. 17): every row of
// it loses its personal data, and nothing more of it is sent.
#include <charconv>
#include <iostream>

#include <nlohmann/json.hpp>

#include "db/personal_data_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"

namespace outbox::cli {
namespace {

constexpr const char* forget_help =
    R"(usage: dispatcher forget --lead ID [--dry-run] [--json]

Erases the personal data of every row of lead ID (lead_project_id), in every
state: in the payload (each personal value becomes "[erased]", the field names
stay), the provider's answers and the attempts log's texts, and the archive.
Rows not sent yet are closed: dead with "forgotten on request", so nothing
more is sent; a row whose request is out right now is not sent again, and its
answer restores nothing. One audit record (outbox_erasure) says when, how many
rows and who asked (--operator), never the data. The rows stay, so the lead's
idempotency keys stay: enqueue_event_delivery of the same (lead, provider,
event) returns false, and a new event of the lead is enqueued as usual.
Requeue and mark-sent refuse erased rows. The CRM can do the same inside its
own deletion transaction: outbox_events.forget_lead(lead_id) in Django, or
SELECT * FROM outbox_forget_lead(lead_id, 'who').

  --lead ID   the lead (event_delivery.lead_project_id)
  --dry-run   count what would change; change nothing
  --json      print the counts as JSON
)";

struct forget_args {
  std::optional<std::int64_t> lead;
  bool dry_run = false;
  bool json = false;
};

// Reads the options into `a`; an exit code when the command ends here (--help, a bad option).
std::optional<int> read_args(std::span<const std::string> args, forget_args& a) {
  arg_reader r(args);
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << forget_help;
      return exit_ok;
    }
    if (r.flag("--dry-run")) {
      a.dry_run = true;
    } else if (r.flag("--json")) {
      a.json = true;
    } else if (auto v = r.option("--lead")) {
      std::int64_t id = 0;
      const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), id);
      if (ec != std::errc{} || end != v->data() + v->size()) {
        std::cerr << "dispatcher forget: --lead must be a whole number (got '" << *v << "')\n";
        return exit_usage;
      }
      a.lead = id;
    } else {
      std::cerr << "dispatcher forget: unknown or incomplete option '" << (r.done() ? "" : r.current()) << "'\n"
                << forget_help;
      return exit_usage;
    }
  }
  if (!a.lead) {
    std::cerr << "dispatcher forget: --lead is required\n" << forget_help;
    return exit_usage;
  }
  return std::nullopt;
}

boost::asio::awaitable<int> async_forget(db::connection& conn, forget_args a) {
  const auto report = co_await db::async_forget_lead(conn, *a.lead, operator_name(), a.dry_run);
  if (a.json) {
    const nlohmann::json out{{"lead", *a.lead},
                             {"dry_run", a.dry_run},
                             {"rows_erased", report.rows_erased},
                             {"rows_closed", report.rows_closed},
                             {"rows_in_flight", report.rows_in_flight}};
    std::cout << out.dump(2) << "\n";
    co_return exit_ok;
  }
  std::cout << (a.dry_run ? "would forget" : "forgot") << " lead " << *a.lead << ": " << report.rows_erased
            << " row(s) lose their personal data, " << report.rows_closed << " not sent yet are closed ("
            << report.rows_in_flight << " with a request out now, not sent again)"
            << (a.dry_run ? " (dry run: nothing changed)" : "") << "\n";
  co_return exit_ok;
}

}  // namespace

int forget_command(std::span<const std::string> args) {
  forget_args a;
  if (const auto done = read_args(args, a)) return *done;
  return with_database(database_conninfo(), [a](db::connection& conn) { return async_forget(conn, a); });
}

}  // namespace outbox::cli

// `dispatcher sweep`: on-call's way to reset rows stuck in `sending`.
#include <iomanip>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "db/connection.hpp"
#include "db/delivery_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/duration_arg.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/ops/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* sweep_help =
    R"(usage: dispatcher sweep [--dry-run] [--provider NAME] [--older-than DURATION] [--json]

Resets rows whose lease expired (their dispatcher died or hung) so they are
sent again with the same idempotency key. Rows that used all their attempts
become dead instead, and rows of destinations configured to hold uncertain
attempts (on_expired_lease=hold) become held. Both follow the policy each
running dispatcher records in the database, so the result is the same from any
shell; only destinations no dispatcher has recorded fall back to this shell's
configuration (with a warning). Running dispatchers do this on a timer too;
this command does it now. Rows with a live lease are never touched.

  --dry-run              list what would be reset; change nothing
  --provider NAME        only rows of this provider (e.g. meta, webhook)
  --older-than DURATION  only leases expired at least this long ago (90s, 15m, 2h, 1d: a unit is required)
  --json                 print rows as a JSON array
)";

struct sweep_args {
  db::sweep_request req;
  bool json = false;
};

// Reads the options into `a`; an exit code when the command ends here (--help, a bad option).
std::optional<int> read_args(std::span<const std::string> args, sweep_args& a) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--help" || arg == "-h") {
      std::cout << sweep_help;
      return exit_ok;
    } else if (arg == "--dry-run") {
      a.req.dry_run = true;
    } else if (arg == "--json") {
      a.json = true;
    } else if (arg == "--provider" && has_value) {
      a.req.provider = args[++i];
    } else if (arg == "--older-than" && has_value) {
      const auto d = read_duration_arg(args[++i]);
      if (!d.value) {
        std::cerr << "dispatcher sweep: --older-than: " << d.problem << "\n";
        return exit_usage;
      }
      a.req.older_than = *d.value;
    } else {
      std::cerr << "dispatcher sweep: unknown or incomplete option '" << arg << "'\n" << sweep_help;
      return exit_usage;
    }
  }
  return std::nullopt;
}

// This shell's configuration, or nullopt after printing why it is unusable.
std::optional<config> load_sweep_config() {
  try {
    return load_config(cli_environment());
  } catch (const config_error& e) {
    std::cerr << "dispatcher sweep: configuration error:\n" << e.what() << "\n";
    return std::nullopt;
  }
}

// The fallback policy for destinations no running dispatcher has recorded.
void apply_local_policy(const config& cfg, db::sweep_request& req) {
  req.max_attempts = cfg.backoff.max_attempts;
  for (const auto& d : cfg.destinations) {
    if (make_provider(d)->hold_reclaimed()) req.hold_destinations.push_back(d.provider + "/" + d.name);
  }
}

void print_json(const std::vector<db::swept_row>& rows) {
  auto out = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back({{"id", r.id},
                   {"provider", r.provider},
                   {"destination", r.destination},
                   {"previous_owner", r.previous_owner},
                   {"attempts", r.attempts},
                   {"new_state", r.new_state},
                   {"expired_seconds_ago", r.expired_seconds_ago}});
  }
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void print_table(const std::vector<db::swept_row>& rows) {
  if (rows.empty()) return;
  std::cout << std::left << std::setw(12) << "id" << std::setw(12) << "provider" << std::setw(16) << "destination"
            << std::setw(10) << "attempts" << std::setw(10) << "new_state" << std::setw(14) << "expired_ago"
            << "previous_owner\n";
  for (const auto& r : rows) {
    // Names and owners are row text from the database: escaped for the terminal.
    std::cout << std::left << std::setw(12) << r.id << std::setw(12) << terminal_text(r.provider) << std::setw(16)
              << terminal_text(r.destination) << std::setw(10) << r.attempts << std::setw(10) << r.new_state
              << std::setw(14) << (std::to_string(static_cast<long long>(r.expired_seconds_ago)) + "s")
              << terminal_text(r.previous_owner) << "\n";
  }
}

void warn_unrecorded_policy(const std::vector<db::swept_row>& rows) {
  std::size_t unknown = 0;
  for (const auto& r : rows) unknown += r.policy_known ? 0 : 1;
  if (unknown > 0) {
    // No dispatcher recorded these destinations' policy (sql/0004): this shell's
    // configuration decided, which may differ from the dispatchers'.
    std::cerr << "dispatcher sweep: warning: " << unknown
              << " row(s) belong to destinations no running dispatcher has recorded; their fate used this "
                 "shell's configuration (OUTBOX_MAX_ATTEMPTS, ON_EXPIRED_LEASE)\n";
  }
}

boost::asio::awaitable<int> async_sweep_rows(db::connection& conn, sweep_args a) {
  const auto rows = (co_await db::async_sweep(conn, a.req)).value();
  if (a.json) {
    print_json(rows);
    co_return exit_ok;
  }
  print_table(rows);
  warn_unrecorded_policy(rows);
  std::cout << (a.req.dry_run ? "would reset " : "reset ") << rows.size() << " row(s) with an expired lease"
            << (a.req.dry_run ? " (dry run: nothing changed)" : "") << "\n";
  co_return exit_ok;
}

}  // namespace

int sweep_command(std::span<const std::string> args) {
  sweep_args a;
  if (const auto done = read_args(args, a)) return *done;
  const auto cfg = load_sweep_config();
  if (!cfg) return exit_usage;
  apply_local_policy(*cfg, a.req);

  return with_database(cfg->database_url,
                       [a = std::move(a)](db::connection& conn) { return async_sweep_rows(conn, a); });
}

}  // namespace outbox::cli

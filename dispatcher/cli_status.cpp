// `dispatcher status`: what on-call looks at first.
#include <iomanip>
#include <iostream>

#include "db/operations_store.hpp"
#include "dispatcher/cli.hpp"
#include "dispatcher/cli_args.hpp"
#include "dispatcher/config.hpp"
#include "dispatcher/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr const char* help = R"(usage: dispatcher status [--json]

Counts of rows by state and by provider/destination (pending, due now,
sending, dead, held), the oldest due row and its age, rows in `sending` whose
lease expired (a dead dispatcher: `dispatcher sweep`), dead rows in the last
24 h, and paused destinations. `sent` is an estimate from table statistics.
)";

long long count(const nlohmann::json& j, const char* key) { return j.contains(key) ? j[key].get<long long>() : 0; }

// A text field from the database, safe for the terminal (names and reasons are CRM or operator text).
std::string text(const nlohmann::json& j, const char* key, const char* missing = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return missing;
  return terminal_text(it->is_string() ? it->get<std::string>() : it->dump());
}

void print_text(const nlohmann::json& s) {
  const auto& by_state = s["by_state"];
  std::cout << "rows:  pending " << count(by_state, "pending") << "   sending " << count(by_state, "sending")
            << "   dead " << count(by_state, "dead") << "   held " << count(by_state, "held") << "   sent ~"
            << s["sent_estimate"].get<long long>() << "\n";
  if (s["oldest_due"].is_null()) {
    std::cout << "oldest due row: none (nothing waiting to be sent)\n";
  } else {
    const auto& o = s["oldest_due"];
    std::cout << "oldest due row: id " << o["id"] << " (" << text(o, "provider") << "/" << text(o, "destination")
              << "), due for " << o["age_seconds"] << " s\n";
  }
  std::cout << "expired leases: " << s["expired_leases"] << (s["expired_leases"] > 0 ? "  -> dispatcher sweep" : "")
            << "\ndead in the last 24 h: " << s["dead_last_24h"] << "\n";
  if (!s["by_destination"].empty()) {
    std::cout << "\n" << std::left << std::setw(14) << "provider" << std::setw(16) << "destination" << std::right
              << std::setw(9) << "pending" << std::setw(8) << "due" << std::setw(9) << "sending" << std::setw(8)
              << "dead" << std::setw(8) << "held" << "\n";
    for (const auto& d : s["by_destination"]) {
      std::cout << std::left << std::setw(14) << text(d, "provider") << std::setw(16) << text(d, "destination")
                << std::right << std::setw(9) << count(d, "pending") << std::setw(8)
                << count(d, "due") << std::setw(9) << count(d, "sending") << std::setw(8) << count(d, "dead")
                << std::setw(8) << count(d, "held")
                << "\n";
    }
  }
  if (s["paused_destinations"].empty()) {
    std::cout << "\npaused destinations: none\n";
  } else {
    std::cout << "\npaused destinations:\n";
    for (const auto& p : s["paused_destinations"]) {
      std::cout << "  " << text(p, "provider") << "/" << text(p, "destination") << "  since " << text(p, "paused_at")
                << "  by " << text(p, "paused_by", "?") << ": " << text(p, "reason") << "\n";
    }
  }
}

}  // namespace

int status_command(std::span<const std::string> args) {
  arg_reader r(args);
  bool json = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << help;
      return exit_ok;
    }
    if (r.flag("--json")) {
      json = true;
      continue;
    }
    std::cerr << "dispatcher status: unknown option '" << r.current() << "'\n" << help;
    return exit_usage;
  }
  return with_database(database_conninfo(), [&](db::connection& conn) -> boost::asio::awaitable<int> {
    const auto s = co_await db::async_status(conn);
    if (json) {
      std::cout << s.dump(2) << "\n";
    } else {
      print_text(s);
    }
    co_return exit_ok;
  });
}

}  // namespace outbox::cli

// `dispatcher status`: what on-call looks at first.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>

#include "db/conversion_report_store.hpp"
#include "db/fleet_store.hpp"
#include "db/operations_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/cli/cli_status.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/ops/display_time.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "providers/api_versions.hpp"
#include "providers/provider.hpp"
#include "providers/user_data/match_keys.hpp"

namespace outbox::cli {
namespace {

constexpr const char* status_help =
    R"(usage: dispatcher status [--json] [--provider P] [--destination NAME] [--state S] [--all]

Counts of rows by state and by provider/destination (pending, due now,
sending, dead, held), the oldest due row and its age, rows in `sending` whose
lease expired (a dead dispatcher: `dispatcher sweep`), dead rows in the last
24 h, and paused destinations. `sent` is counted exactly on a table of up to 100,000 rows, estimated
from table statistics (shown as ~N) above that.
Then, per provider/destination, the conversions: match-key coverage (share of
the delivered attempts of the last 24 h carrying each key), fields dropped from
them by field:reason (top 5), and the requests the provider accepted in the
last 7 days by processing status (rows), with the latest failed one.
Last, the configured destinations (read from this environment, as `run`
reads it) whose API version stops answering within 60 days, or already has.

A summary line counts the destinations by state. Each per-destination list
shows its first 20 entries (the most rows due first); --all shows every one.
  --provider P          only destinations of provider P
  --destination NAME    only destinations named NAME (a trailing * matches a prefix: project_*)
  --state S             only destinations that are: paused (by on-call), automatic (paused
                        by a dispatcher, circuits included), circuit-open, unusable (a
                        registry entry no dispatcher can use), or have rows due, dead or held
  --json                the whole status as one JSON object (the filter applies; no limit)
)";

// Entries of each per-destination list the text form shows without --all or a filter.
constexpr std::size_t list_limit = 20;

// The order provider_request statuses are printed in (sql/0005_conversion_facts.sql).
constexpr std::array<const char*, 6> request_statuses{"PENDING",         "PROCESSING", "SUCCESS",
                                                      "PARTIAL_SUCCESS", "FAILURE",    "UNKNOWN"};

long long count(const nlohmann::json& j, const char* key) { return j.contains(key) ? j[key].get<long long>() : 0; }

// A timestamp field from the database, in the one format of the text output.
std::string time_text(const nlohmann::json& j, const char* key, const char* missing = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null() || !it->is_string() || it->get<std::string>().empty()) return missing;
  return terminal_text(display_time(it->get<std::string>()));
}

// A text field from the database, safe for the terminal (names and reasons are CRM or operator text).
std::string text(const nlohmann::json& j, const char* key, const char* missing = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return missing;
  return terminal_text(it->is_string() ? it->get<std::string>() : it->dump());
}

// "92%": share of the delivered attempts carrying a key. Rounded down, so 100%
// means every one; "<1%" keeps a rare key from reading as absent.
std::string share(long long n, long long total) {
  if (n == 0 || total == 0) return "0%";
  const long long percent = n * 100 / total;
  return percent == 0 ? "<1%" : std::to_string(percent) + "%";
}

void print_match_keys(const nlohmann::json& d) {
  const auto delivered = count(d, "delivered");
  std::string line;
  bool any = false;
  for (const auto& k : d["match_keys"]) {
    const auto n = count(k, "attempts");
    any = any || n > 0;
    line += (line.empty() ? "" : ", ") + text(k, "key") + " " + share(n, delivered);
  }
  std::cout << "    match keys: " << (any ? line : "none on any delivered attempt") << "\n";
}

void print_dropped(const nlohmann::json& d) {
  const auto total = count(d, "dropped_total");
  if (total == 0) {
    std::cout << "    dropped fields: none\n";
    return;
  }
  std::string line;
  for (const auto& f : d["dropped"]) {
    line += (line.empty() ? "" : ", ") + text(f, "field") + ":" + text(f, "reason") + " " +
            std::to_string(count(f, "count"));
  }
  std::cout << "    dropped fields: " << total << " in all; " << line << "\n";
}

void print_requests(const nlohmann::json& r) {
  std::string line;
  for (const char* status : request_statuses) {
    const auto it = r["by_status"].find(status);
    const long long rows = it == r["by_status"].end() ? 0 : count(*it, "rows");
    line += (line.empty() ? "" : ", ") + std::string(status) + " " + std::to_string(rows);
  }
  std::cout << "    provider requests, last 7 days (rows): " << line << "\n";
  const auto& p = r["last_problem"];
  if (p.is_null()) return;
  std::cout << "      latest " << text(p, "status") << ": request " << text(p, "request_id") << ", "
            << count(p, "row_count") << " rows, checked " << time_text(p, "checked_at", "never") << ": "
            << text(p, "detail", "-") << "\n";
}

void print_conversions(const nlohmann::json& conversions) {
  if (conversions.empty()) {
    std::cout << "\nconversions: no delivered attempts in the last 24 h, no provider requests in the last 7 days\n";
    return;
  }
  std::cout << "\nconversions (delivered attempts of the last 24 h):\n";
  for (const auto& d : conversions) {
    std::cout << "  " << text(d, "provider") << "/" << text(d, "destination") << ": ";
    if (count(d, "delivered") == 0) {
      std::cout << "no delivered attempts\n";
    } else {
      std::cout << count(d, "delivered") << " delivered\n";
      print_match_keys(d);
      print_dropped(d);
    }
    if (!d["provider_requests"].is_null()) print_requests(d["provider_requests"]);
  }
}

// Seconds as "42 s", "12 min", "3.5 h": lag is read at a glance.
std::string age(double seconds) {
  char buf[32];
  if (seconds < 120) std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else if (seconds < 7200) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  return buf;
}

// Delivery lag: the oldest row not yet delivered, by created_at. It rises while a
// destination is paused, broken or behind, even when no row is due.
void print_lag(const nlohmann::json& lags) {
  if (lags.empty()) {
    std::cout << "\ndelivery lag: none (nothing waiting)\n";
    return;
  }
  std::cout << "\ndelivery lag (oldest pending or sending row, by created_at):\n";
  for (const auto& l : lags) {
    std::cout << "  " << text(l, "provider") << "/" << text(l, "destination") << "  " << age(l.value("seconds", 0.0))
              << "  (" << l.value("rows", 0) << " rows)\n";
  }
}

// The dispatchers' heartbeats, with the pauses each took by itself.
// The live dispatchers only (a clean stop removes its heartbeat at once); one
// that stopped beating without saying goodbye (crashed, killed) is counted apart.
void print_dispatchers(const nlohmann::json& fleet) {
  const auto live = std::count_if(fleet.begin(), fleet.end(), [](const auto& d) { return d.value("live", false); });
  const auto silent = static_cast<std::ptrdiff_t>(fleet.size()) - live;
  if (live == 0) {
    std::cout << "\ndispatchers: none is running (no live heartbeat)\n";
  } else {
    std::cout << "\ndispatchers:\n";
  }
  for (const auto& d : fleet) {
    if (!d.value("live", false)) continue;
    std::cout << "  " << text(d, "instance") << "  live  version " << text(d, "version") << "  " << text(d, "host")
              << " pid " << d.value("pid", 0) << "  up since " << time_text(d, "started_at") << "  last seen "
              << time_text(d, "last_seen") << "\n";
    for (const auto& p : d.value("automatic_pauses", nlohmann::json::array())) {
      if (p.value("kind", "") == "registry") {  // a destination of the registry it cannot use: its rows wait
        std::cout << "    registry destination " << text(p, "provider") << "/" << text(p, "destination") << " "
                  << text(p, "reason") << "  -> dispatcher destination show " << text(p, "provider") << " "
                  << text(p, "destination") << "\n";
        continue;
      }
      std::cout << "    paused by itself: " << text(p, "provider") << "/" << text(p, "destination") << " since "
                << time_text(p, "since", "?") << " until " << time_text(p, "until", "?") << ": " << text(p, "reason")
                << "  -> dispatcher resume " << text(p, "provider") << " " << text(p, "destination") << "\n";
    }
  }
  if (silent > 0) {
    std::cout << "  (" << silent << " more stopped beating without a clean stop: crashed or killed; `status --json` "
              << "lists them, and their rows come back when their leases expire)\n";
  }
}

// Configured destinations whose pinned API version is near or past its sunset
// (providers/api_versions.hpp). `status` usually runs where the dispatcher's
// environment is; without a usable configuration there is nothing to say (null).
nlohmann::json api_version_warnings() {
  nlohmann::json out = nlohmann::json::array();
  try {
    const auto cfg = load_config(cli_environment());
    const auto now = std::chrono::system_clock::now();
    for (const auto& d : cfg.destinations) {
      const std::string version(make_provider(d)->api_version());  // the provider is a temporary
      if (auto w = providers::api_sunset_warning(d.provider, version, now)) {
        out.push_back({{"provider", d.provider}, {"destination", d.name}, {"version", version}, {"warning", *w}});
      }
    }
  } catch (const std::exception&) {
    return nullptr;
  }
  return out;
}

void print_api_versions(const nlohmann::json& warnings) {
  if (warnings.is_null()) return;
  if (warnings.empty()) {
    std::cout << "\napi versions: none of the configured destinations' versions ends within 60 days\n";
    return;
  }
  std::cout << "\napi versions:\n";
  for (const auto& w : warnings) {
    std::cout << "  " << text(w, "provider") << "/" << text(w, "destination") << ": " << text(w, "warning") << "\n";
  }
}

// Keeps the first `list_limit` entries; returns how many it dropped.
std::size_t cap(nlohmann::json& list) {
  if (!list.is_array() || list.size() <= list_limit) return 0;
  const std::size_t dropped = list.size() - list_limit;
  list.erase(list.begin() + list_limit, list.end());
  return dropped;
}

void print_more(std::size_t n) {
  if (n > 0) std::cout << "  ... and " << n << " more: --provider, --destination, --state or --all\n";
}

// Each per-destination list cut to its first `list_limit` entries (the most rows
// due first); how many each lost.
std::map<std::string, std::size_t> cap_lists(nlohmann::json& s) {
  std::map<std::string, std::size_t> more;
  auto& rows = s["by_destination"];
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return count(a, "due") > count(b, "due"); });
  for (const char* list : {"by_destination", "paused_destinations", "delivery_lag", "conversions"}) {
    if (s.contains(list)) more[list] = cap(s[list]);
  }
  if (!s.contains("dispatchers")) return more;  // a schema before heartbeats
  for (auto& d : s["dispatchers"]) {
    if (d.contains("automatic_pauses")) more["pauses"] += cap(d["automatic_pauses"]);
  }
  return more;
}

void print_summary(const nlohmann::json& sum) {
  std::cout << "destinations: " << count(sum, "with_rows") << " with unsent rows (" << count(sum, "with_due")
            << " with rows due, " << count(sum, "with_dead") << " with dead rows), " << count(sum, "paused")
            << " paused by on-call, " << count(sum, "automatic") << " paused by a dispatcher ("
            << count(sum, "circuit-open") << " circuit open), " << count(sum, "unusable")
            << " registry entries not usable\n";
}

void print_text(nlohmann::json& s, bool all) {
  // Which database this is, first: on-call may have several shells open.
  if (s.contains("database")) std::cout << "database: " << text(s, "database") << "\n";
  const auto& by_state = s["by_state"];
  std::cout << "rows:  pending " << count(by_state, "pending") << "   sending " << count(by_state, "sending")
            << "   dead " << count(by_state, "dead") << "   held " << count(by_state, "held") << "   sent "
            << (s.value("sent_estimated", true) ? "~" : "") << count(by_state, "sent") << "\n";
  if (s["oldest_due"].is_null()) {
    std::cout << "oldest due row: none (nothing waiting to be sent)\n";
  } else {
    const auto& o = s["oldest_due"];
    std::cout << "oldest due row: id " << o["id"] << " (" << text(o, "provider") << "/" << text(o, "destination")
              << "), due for " << o["age_seconds"] << " s\n";
  }
  std::cout << "expired leases: " << s["expired_leases"] << (s["expired_leases"] > 0 ? "  -> dispatcher sweep" : "")
            << "\ndead in the last 24 h: " << s["dead_last_24h"] << "\n";
  if (s.contains("destinations_summary")) print_summary(s["destinations_summary"]);
  auto more = all ? std::map<std::string, std::size_t>{} : cap_lists(s);
  if (!s["by_destination"].empty()) {
    // Columns as wide as their longest name ("google_data_manager"), plus a gap.
    int pw = 12, dw = 14;
    for (const auto& d : s["by_destination"]) {
      pw = std::max(pw, static_cast<int>(text(d, "provider").size()) + 2);
      dw = std::max(dw, static_cast<int>(text(d, "destination").size()) + 2);
    }
    std::cout << "\n"
              << std::left << std::setw(pw) << "provider" << std::setw(dw) << "destination" << std::right
              << std::setw(9) << "pending" << std::setw(8) << "due" << std::setw(9) << "sending" << std::setw(8)
              << "dead" << std::setw(8) << "held"
              << "\n";
    for (const auto& d : s["by_destination"]) {
      std::cout << std::left << std::setw(pw) << text(d, "provider") << std::setw(dw) << text(d, "destination")
                << std::right << std::setw(9) << count(d, "pending") << std::setw(8) << count(d, "due") << std::setw(9)
                << count(d, "sending") << std::setw(8) << count(d, "dead") << std::setw(8) << count(d, "held") << "\n";
    }
    print_more(more["by_destination"]);
  }
  if (s["paused_destinations"].empty()) {
    std::cout << "\npaused destinations: none\n";
  } else {
    std::cout << "\npaused destinations:\n";
    for (const auto& p : s["paused_destinations"]) {
      std::cout << "  " << text(p, "provider") << "/" << text(p, "destination") << "  since "
                << time_text(p, "paused_at") << "  by " << text(p, "paused_by", "?") << ": " << text(p, "reason")
                << "\n";
    }
    print_more(more["paused_destinations"]);
  }
  print_lag(s.value("delivery_lag", nlohmann::json::array()));
  print_more(more["delivery_lag"]);
  print_dispatchers(s.value("dispatchers", nlohmann::json::array()));
  print_more(more["pauses"]);
  print_conversions(s.value("conversions", nlohmann::json::array()));
  print_more(more["conversions"]);
  print_api_versions(s.value("api_versions", nlohmann::json{}));
}

// Lag and heartbeats (sql/0006); absent on an older schema.
boost::asio::awaitable<void> add_fleet(db::connection& conn, nlohmann::json& s) {
  const auto lags = co_await db::async_delivery_lag(conn);
  if (lags) {
    s["delivery_lag"] = nlohmann::json::array();
    for (const auto& l : *lags) {
      s["delivery_lag"].push_back(
          {{"provider", l.provider}, {"destination", l.destination}, {"seconds", l.seconds}, {"rows", l.rows}});
    }
  }
  const auto fleet = co_await db::async_try(db::async_fleet(conn));
  if (fleet) s["dispatchers"] = *fleet;
  const auto where = co_await db::async_try(db::async_database_label(conn));
  if (where) s["database"] = *where;
}

struct status_request {
  status_filter filter;
  bool json = false;
  bool all = false;
};

boost::asio::awaitable<int> async_print_status(db::connection& conn, status_request req) {
  auto s = co_await db::async_status(conn);
  const std::vector<std::string> keys(providers::match_key::all.begin(), providers::match_key::all.end());
  s["conversions"] = co_await db::async_conversion_report(conn, keys);
  co_await add_fleet(conn, s);
  s["api_versions"] = api_version_warnings();
  s["destinations_summary"] = destination_summary(s);  // of every destination, before the filter
  filter_status(s, req.filter);
  if (req.json) {
    std::cout << s.dump(2) << "\n";
  } else {
    print_text(s, req.all || req.filter.any());
  }
  co_return exit_ok;
}

}  // namespace

int status_command(std::span<const std::string> args) {
  arg_reader r(args);
  status_request req;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << status_help;
      return exit_ok;
    }
    if (r.flag("--json")) {
      req.json = true;
    } else if (r.flag("--all")) {
      req.all = true;
    } else if (auto p = r.option("--provider")) {
      req.filter.provider = *p;
    } else if (auto d = r.option("--destination")) {
      req.filter.destination = *d;
    } else if (auto st = r.option("--state")) {
      req.filter.state = *st;
    } else {
      std::cerr << "dispatcher status: unknown or incomplete option '" << r.current() << "'\n" << status_help;
      return exit_usage;
    }
  }
  const auto& states = status_states();
  if (!req.filter.state.empty() && std::find(states.begin(), states.end(), req.filter.state) == states.end()) {
    std::cerr << "dispatcher status: --state takes one of paused, automatic, circuit-open, unusable, due, dead, held\n";
    return exit_usage;
  }
  return with_database(database_conninfo(), [req](db::connection& conn) { return async_print_status(conn, req); });
}

}  // namespace outbox::cli

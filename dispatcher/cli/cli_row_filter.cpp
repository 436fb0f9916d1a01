#include "dispatcher/cli/cli_row_filter.hpp"

#include <algorithm>
#include <charconv>
#include <iomanip>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "dispatcher/cli/duration_arg.hpp"
#include "dispatcher/ops/terminal_text.hpp"

namespace outbox::cli {
namespace {

constexpr std::int64_t max_limit = 1'000'000;

std::optional<std::int64_t> read_int(const std::string& text) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

// An age ("1h": an hour ago) or a time for PostgreSQL to read; nullopt after printing why.
std::optional<db::time_arg> read_when(const std::string& text, std::string_view command, std::string_view option) {
  if (!looks_like_duration(text)) return db::time_arg{.absolute = text, .ago = std::nullopt};
  const auto d = read_duration_arg(text, zero_duration::refused);
  if (!d.value) {
    std::cerr << "dispatcher " << command << ": " << option << ": " << d.problem << "\n";
    return std::nullopt;
  }
  return db::time_arg{.absolute = std::nullopt, .ago = d.value};
}

// "--state dead,held" into `states`; false after printing why.
bool read_states(const std::string& value, std::vector<std::string>& out, std::string_view command,
                 std::initializer_list<std::string_view> allowed) {
  const auto is_allowed = [&](std::string_view s) {
    return std::find(allowed.begin(), allowed.end(), s) != allowed.end();
  };
  if (value == "both" && is_allowed("dead") && is_allowed("held")) {
    out.insert(out.end(), {"dead", "held"});
    return true;
  }
  for (std::size_t start = 0; start <= value.size();) {
    const auto comma = std::min(value.find(',', start), value.size());
    const std::string state = value.substr(start, comma - start);
    if (!is_allowed(state)) {
      std::string names;
      for (const auto s : allowed) names += (names.empty() ? "" : ", ") + std::string(s);
      std::cerr << "dispatcher " << command << ": --state takes " << names << " (comma-separated or repeated), not '"
                << terminal_text(state) << "'\n";
      return false;
    }
    if (std::find(out.begin(), out.end(), state) == out.end()) out.push_back(state);
    start = comma + 1;
  }
  return true;
}

// The filter options that take a text value.
option_read read_text_filter(arg_reader& r, row_filter_args& a) {
  db::row_filter& f = a.filter;
  if (auto p = r.option("--provider")) {
    f.provider = *p;
  } else if (auto d = r.option("--destination")) {
    f.destination = *d;
  } else if (auto e = r.option("--error-contains")) {
    f.error_contains = *e;
  } else {
    return option_read::not_mine;
  }
  a.any_filter = true;
  return option_read::ok;
}

// Prints why PostgreSQL could not read the time; returns false.
bool unreadable_time(std::string_view command, std::string_view option, const db::time_arg& when) {
  std::cerr << "dispatcher " << command << ": " << option << ": PostgreSQL cannot read '"
            << terminal_text(when.absolute.value_or(""), 80)
            << "' as a time (give an age with a unit such as 30m, 1h or 2d, or a time such as "
               "'2026-11-30 08:00+00')\n";
  return false;
}

}  // namespace

option_read read_row_filter_option(arg_reader& r, row_filter_args& a, std::string_view command,
                                   std::initializer_list<std::string_view> states) {
  db::row_filter& f = a.filter;
  if (r.flag("--dry-run")) {
    f.dry_run = true;
  } else if (r.flag("--json")) {
    a.json = true;
  } else if (auto v = r.option("--id")) {
    const auto id = read_int(*v);
    if (!id) {
      std::cerr << "dispatcher " << command << ": --id: not a row id: '" << terminal_text(*v) << "'\n";
      return option_read::bad;
    }
    f.ids.push_back(*id);
    a.any_filter = true;
  } else if (auto l = r.option("--lead")) {
    f.lead = read_int(*l);
    if (!f.lead) {
      std::cerr << "dispatcher " << command << ": --lead: not a lead id (lead_project_id, a whole number): '"
                << terminal_text(*l) << "'\n";
      return option_read::bad;
    }
    a.any_filter = true;
  } else if (auto n = r.option("--limit")) {
    f.limit = read_int(*n);
    if (!f.limit || *f.limit < 1 || *f.limit > max_limit) {
      std::cerr << "dispatcher " << command << ": --limit must be 1.." << max_limit << "\n";
      return option_read::bad;
    }
  } else if (auto s = r.option("--since")) {
    a.since = read_when(*s, command, "--since");
    if (!a.since) return option_read::bad;
    a.any_filter = true;
  } else if (auto u = r.option("--until")) {
    a.until = read_when(*u, command, "--until");
    if (!a.until) return option_read::bad;
    a.any_filter = true;
  } else if (auto st = r.option("--state")) {
    if (!a.states_given) f.states.clear();
    a.states_given = true;
    if (!read_states(*st, f.states, command, states)) return option_read::bad;
  } else {
    return read_text_filter(r, a);
  }
  return option_read::ok;
}

boost::asio::awaitable<bool> async_resolve_times(db::connection& conn, row_filter_args& a, std::string_view command) {
  if (a.since) {
    a.filter.since = co_await db::async_resolve_time(conn, *a.since);
    if (!a.filter.since) co_return unreadable_time(command, "--since", *a.since);
  }
  if (a.until) {
    a.filter.until = co_await db::async_resolve_time(conn, *a.until);
    if (!a.filter.until) co_return unreadable_time(command, "--until", *a.until);
  }
  co_return true;
}

void print_changed_rows(const std::vector<db::changed_row>& rows, bool json, bool dry_run, std::string_view done,
                        std::string_view would) {
  if (json) {
    auto out = nlohmann::json::array();
    for (const auto& row : rows) {
      out.push_back({{"id", row.id},
                     {"provider", row.provider},
                     {"destination", row.destination},
                     {"event_name", row.event_name},
                     {"previous_state", row.previous_state},
                     {"last_error", row.last_error}});
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  // Every text column is CRM or provider text: escaped for the terminal.
  for (const auto& row : rows) {
    std::cout << std::left << std::setw(10) << row.id << std::setw(12) << terminal_text(row.provider) << std::setw(14)
              << terminal_text(row.destination) << std::setw(14) << terminal_text(row.event_name) << std::setw(8)
              << terminal_text(row.previous_state) << "  " << terminal_text(row.last_error, 80) << "\n";
  }
  std::cout << (dry_run ? "would " + std::string(would) : std::string(done)) << " " << rows.size() << " row(s)"
            << (dry_run ? " (dry run: nothing changed)" : "") << "\n";
}

boost::asio::awaitable<void> async_report_erased(db::connection& conn, const row_filter_args& a,
                                                 std::string_view command) {
  const auto erased = co_await db::async_count_erased(conn, a.filter);
  if (erased == 0) co_return;
  std::cerr << "dispatcher " << command << ": refused " << erased
            << " row(s) whose personal data was erased (retention, or `dispatcher forget`): what would be sent is "
               "no longer there; see `dispatcher inspect`\n";
}

}  // namespace outbox::cli

#include "dispatcher/ops/status_page.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>
#include <vector>

#include "dispatcher/ops/display_time.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/ops/version.hpp"
#include "providers/canonical_event.hpp"

namespace outbox {
namespace {

constexpr std::size_t rows_shown = 50;  // destinations listed without a filter

using sys_clock = std::chrono::system_clock;

// The one timestamp format of the page, `status` and the logs' seconds: RFC 3339, UTC.
std::string iso_time(sys_clock::time_point t) {
  return providers::format_rfc3339_utc(std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
}

// "since 2026-12-06T03:54:05.1+00:00: reason": the timestamp after "since " in the page's format.
std::string display_time_in(const std::string& text) {
  constexpr std::string_view prefix = "since ";
  if (!text.starts_with(prefix)) return text;
  const auto end = text.find(": ", prefix.size());
  if (end == std::string::npos) return text;
  return std::string(prefix) + display_time(text.substr(prefix.size(), end - prefix.size())) + text.substr(end);
}

// "0 s", "42 s", "12 min", "3.5 h": what an on-call reads at a glance.
std::string age_text(double seconds) {
  char buf[32];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  }
  return buf;
}

// A CSS class from a state: "circuit open" -> "state-circuit-open".
std::string state_class(const std::string& state) {
  std::string out = "state-";
  for (char c : state) {
    if (c >= 'a' && c <= 'z') {
      out += c;
    } else if (!out.ends_with('-')) {
      out += '-';
    }
  }
  while (out.ends_with('-')) out.pop_back();
  return out;
}

template <class Map>
typename Map::mapped_type value_or(const Map& map, const typename Map::key_type& k,
                                   typename Map::mapped_type fallback) {
  const auto it = map.find(k);
  return it == map.end() ? fallback : it->second;
}

void cell(std::string& out, const char* cls, const std::string& html) {
  out += "<td class=\"";
  out += cls;
  out += "\">" + html + "</td>";
}

// An automatic pause for an answer (credentials refused, ...) whose reason is
// the destination's last error: shown in the last-error column, not twice.
bool reason_is_an_error(const destination_view& v) {
  return v.state == "paused (automatic)" || (v.state == "probing" && !v.reason.starts_with("circuit open"));
}

// The destination's state, since when, who paused it (on-call, configuration)
// and when it is probed again. An automatic pause's reason is the last error.
std::string state_html(const destination_view& v) {
  std::string out = "<span class=\"state\">" + html_text(v.state) + "</span>";
  if (!v.reason.empty() && (v.state == "paused" || v.state == "not usable")) {
    out += "<br><span class=\"reason\">" + html_text(v.reason) + "</span>";
  }
  if (v.paused_since) out += "<br><span class=\"when\">since " + iso_time(*v.paused_since) + "</span>";
  if (v.reopens_at) out += "<br><span class=\"until\">probe at " + iso_time(*v.reopens_at) + "</span>";
  if (!v.api_sunset_warning.empty()) out += "<br><span class=\"note\">" + html_text(v.api_sunset_warning) + "</span>";
  return out;
}

std::string last_error_html(const metrics& m, const metrics::destination_key& k) {
  const auto it = m.last_errors.find(k);
  const auto view = m.destinations.find(k);
  if (view != m.destinations.end() && reason_is_an_error(view->second) && !view->second.reason.empty() &&
      (it == m.last_errors.end() || !view->second.paused_since || it->second.at < *view->second.paused_since)) {
    const auto& v = view->second;
    return "<span class=\"error\">" + html_text(v.reason) + "</span>" +
           (v.paused_since ? "<br><span class=\"when\">" + iso_time(*v.paused_since) + "</span>" : std::string());
  }
  if (it == m.last_errors.end()) return "";
  return "<span class=\"error\">" + html_text(it->second.message) + "</span><br><span class=\"when\">" +
         iso_time(it->second.at) + "</span>";
}

// The automatic pauses other live dispatchers report for this destination: each
// process pauses by itself, so this one may deliver while another does not.
std::string other_dispatchers_html(const metrics& m, const metrics::destination_key& k) {
  std::string out;
  for (const auto& d : m.fleet) {
    if (d.instance == m.instance) continue;
    const auto it = d.automatic_pauses.find(k);
    if (it == d.automatic_pauses.end()) continue;
    out += "<br><span class=\"note other\">paused on " + html_text(d.instance) + ": " +
           html_text(display_time_in(it->second)) + "</span>";
  }
  return out;
}

void destination_row(std::string& out, const status_page_input& in, const metrics::destination_key& k,
                     const destination_view& v) {
  const auto& m = in.m;
  const auto recent = in.history.recent(m, k);
  out += "<tr class=\"destination " + state_class(v.state) + "\" data-provider=\"" + html_text(k.first) +
         "\" data-destination=\"" + html_text(k.second) + "\" data-state=\"" + html_text(v.state) + "\">";
  cell(out, "provider", html_text(k.first));
  cell(out, "destination", html_text(k.second));
  cell(out, "state", state_html(v) + other_dispatchers_html(m, k));
  cell(out, "backlog", m.backlog_rows ? std::to_string(value_or(*m.backlog_rows, k, std::int64_t{0})) : "-");
  cell(out, "lag", age_text(value_or(m.delivery_lag_seconds, k, 0.0)));
  cell(out, "delivered", std::to_string(recent.delivered));
  cell(out, "retried", std::to_string(recent.retried));
  cell(out, "failed", std::to_string(recent.failed));
  cell(out, "last-error", last_error_html(m, k));
  out += "</tr>\n";
}

// Configured destinations, then any other label seen ("unknown": rows naming no configured destination).
std::map<metrics::destination_key, destination_view> shown_destinations(const metrics& m) {
  auto shown = m.destinations;
  for (const auto& [k, why] : m.registry_unusable) shown.try_emplace(k, destination_view{"not usable", why, {}});
  for (const auto& [k, n] : m.deliveries) {
    shown.try_emplace({std::get<0>(k), std::get<1>(k)}, destination_view{"not configured", {}, {}});
  }
  return shown;
}

// Which rows come first: what is broken, then what was paused on purpose, then the rest.
int look_first(const std::string& state) {
  static const std::map<std::string, int> rank{{"unusable", 0},       {"circuit-open", 1}, {"automatic", 2},
                                               {"not-configured", 3}, {"paused", 4},       {"delivering", 5}};
  const auto it = rank.find(state);
  return it == rank.end() ? 5 : it->second;
}

void destinations_table(std::string& out, const status_page_input& in) {
  const bool full = in.history.full_window(in.steady_now);
  const std::string window = full ? "last hour" : "since start";
  out +=
      "<table id=\"destinations\">\n<thead><tr><th>provider</th><th>destination</th><th>state</th>"
      "<th>backlog</th><th>lag</th><th>delivered (" +
      window + ")</th><th>retried (" + window + ")</th><th>failed (" + window +
      ")</th><th>last error</th></tr></thead>\n<tbody>\n";
  // Those that need a look first (not delivering), then by name; without a filter, the first rows_shown.
  std::vector<std::pair<metrics::destination_key, destination_view>> rows;
  for (const auto& [k, v] : shown_destinations(in.m)) {
    if (in.filter.matches(k, v)) rows.emplace_back(k, v);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return look_first(status_state_of(a.second)) < look_first(status_state_of(b.second));
  });
  const std::size_t limit = in.filter.any() ? rows.size() : std::min(rows.size(), rows_shown);
  for (std::size_t i = 0; i < limit; ++i) destination_row(out, in, rows[i].first, rows[i].second);
  if (limit < rows.size()) {
    out += "<tr class=\"more\"><td colspan=\"9\">" + std::to_string(rows.size() - limit) +
           " more destinations: filter by provider, destination or state</td></tr>\n";
  }
  if (rows.empty()) {
    out += std::string("<tr class=\"none\"><td colspan=\"9\">") +
           (in.filter.any() ? "no destination matches the filter" : "no destination is configured") + "</td></tr>\n";
  }
  out += "</tbody>\n</table>\n";
}

// Every live dispatcher by its heartbeat, this one marked.
void dispatchers_table(std::string& out, const metrics& m) {
  if (m.fleet.empty()) return;
  out +=
      "<table id=\"dispatchers\">\n<thead><tr><th>dispatcher</th><th>host</th><th>last seen</th>"
      "<th>paused by itself</th></tr></thead>\n<tbody>\n";
  for (const auto& d : m.fleet) {
    std::string paused;
    for (const auto& [k, why] : d.automatic_pauses)
      paused += (paused.empty() ? "" : "<br>") + html_text(k.first + "/" + k.second) + " <span class=\"note\">" +
                html_text(display_time_in(why)) + "</span>";
    out += "<tr class=\"dispatcher\" data-instance=\"" + html_text(d.instance) + "\">";
    cell(out, "instance", html_text(d.instance) + (d.instance == m.instance ? " (this one)" : ""));
    cell(out, "host", html_text(d.host));
    cell(out, "last-seen", html_text(display_time(d.last_seen)));
    cell(out, "paused", paused.empty() ? "-" : paused);
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
}

// "1000: 890 delivering, 100 paused, 10 circuit-open": every destination by state, before any filter.
std::string destination_counts(const metrics& m) {
  std::map<std::string, std::size_t> by_state;
  const auto shown = shown_destinations(m);
  for (const auto& [k, v] : shown) ++by_state[status_state_of(v)];
  std::string out = std::to_string(shown.size());
  std::string sep = ": ";
  for (const auto& state : status_page_states()) {
    if (!by_state.contains(state)) continue;
    out += sep + std::to_string(by_state[state]) + " " + state;
    sep = ", ";
  }
  return out;
}

// A GET form for the filter (no script: the page runs none).
void filter_form(std::string& out, const status_page_filter& f) {
  out += "<form id=\"filter\" method=\"get\" action=\"/status\">provider <input name=\"provider\" value=\"" +
         html_text(f.provider) + "\"> destination <input name=\"destination\" value=\"" + html_text(f.destination) +
         "\" placeholder=\"project_*\"> state <select name=\"state\"><option value=\"\">any</option>";
  for (const auto& s : status_page_states()) {
    out += "<option" + std::string(s == f.state ? " selected" : "") + ">" + s + "</option>";
  }
  out += "</select> <button>filter</button></form>\n";
}

void summary(std::string& out, const status_page_input& in) {
  const auto& m = in.m;
  const auto& [ready, why] = in.readiness;
  out += "<dl id=\"summary\">\n";
  auto item = [&](const char* id, const char* label, const std::string& html) {
    out += std::string("<dt>") + label + "</dt><dd id=\"" + id + "\">" + html + "</dd>\n";
  };
  item("readiness", "ready", ready ? "ready" : "not ready: " + html_text(why));
  item("instance", "instance", html_text(m.instance));
  item("version", "version", html_text(version()));
  item("in-flight", "rows in flight here", std::to_string(m.in_flight));
  std::string rows;
  for (const auto state : open_row_states) {
    rows += std::string(rows.empty() ? "" : ", ") + std::string(state) + " " +
            std::to_string(value_or(m.rows_by_state, std::string(state), std::int64_t{0}));
  }
  item("rows", "rows (whole table)", rows);
  item("oldest-due", "oldest due row", age_text(m.oldest_due_seconds));
  item("destinations", "destinations", destination_counts(m));
  item("generated", "generated", iso_time(in.now));
  out += "</dl>\n";
}

constexpr const char* style = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.error{color:#a00}.reason,.when,.until,.note{color:#666;font-size:90%}
tr.state-delivering .state{color:#070}tr.state-paused .state,tr.state-paused-automatic .state,
tr.state-circuit-open .state,tr.state-not-configured .state{color:#a00;font-weight:bold}
dl{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}dt{color:#666}dd{margin:0}
)css";

}  // namespace

std::string html_text(std::string_view text, std::size_t max_bytes) {
  const std::string safe = terminal_text(text, max_bytes);
  std::string out;
  out.reserve(safe.size());
  for (char c : safe) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

delivery_history::delivery_history(clock::time_point started) { samples_.push_back({started, {}}); }

settled_counts delivery_history::totals(const metrics& m, const metrics::destination_key& k) {
  settled_counts c;
  auto count = [&](const char* outcome) {
    return value_or(m.deliveries, {k.first, k.second, outcome}, std::uint64_t{0});
  };
  c.delivered = count("delivered");
  c.retried = count("retry");
  c.failed = count("dead") + count("rejected");
  return c;
}

void delivery_history::sample(const metrics& m, clock::time_point now) {
  if (now - samples_.back().at < resolution) return;
  entry e{now, {}};
  for (const auto& [k, n] : m.deliveries) e.totals.try_emplace({std::get<0>(k), std::get<1>(k)});
  for (auto& [k, c] : e.totals) c = totals(m, k);
  samples_.push_back(std::move(e));
  // Keep one sample at least a window old (the baseline), drop the older ones.
  while (samples_.size() > 1 && now - samples_[1].at >= window) samples_.pop_front();
}

settled_counts delivery_history::recent(const metrics& m, const metrics::destination_key& k) const {
  const auto now = totals(m, k);
  const auto base = value_or(samples_.front().totals, k, settled_counts{});
  return {now.delivered - base.delivered, now.retried - base.retried, now.failed - base.failed};
}

bool delivery_history::full_window(clock::time_point now) const { return now - samples_.front().at >= window; }

std::string render_status_page(const status_page_input& in) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><meta http-equiv=\"refresh\" content=\"15\">"
      "<title>outbox dispatcher status</title><style>";
  out += style;
  out += "</style></head>\n<body>\n<h1>outbox dispatcher</h1>\n";
  summary(out, in);
  out += "<h2>Destinations</h2>\n";
  filter_form(out, in.filter);
  destinations_table(out, in);
  if (!in.m.fleet.empty()) {
    out += "<h2>Dispatchers</h2>\n";
    dispatchers_table(out, in.m);
  }
  out += "<p class=\"note\">State, delivered, retried, failed and last error are this dispatcher's (" +
         html_text(in.m.instance) +
         "; other dispatchers keep their own counts, and their automatic pauses are listed under each state); "
         "counts come from in-process counters since " +
         iso_time(in.now - std::chrono::duration_cast<sys_clock::duration>(in.steady_now - in.history.baseline_at())) +
         ". Backlog, lag and rows are read from the database on the sweep interval. Refreshes every 15 s; "
         "/metrics has the same figures for Prometheus.</p>\n</body></html>\n";
  return out;
}

}  // namespace outbox

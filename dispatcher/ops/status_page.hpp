#pragma once
// The read-only HTML page at /status on the metrics port, for a human at 3 a.m.
// without Grafana: per destination its state (open, paused, circuit open...),
// backlog, delivery lag, last error, and what this process settled in the last
// hour. Built from the same metrics snapshot as /metrics: no database query per
// view, no payloads, no CRM fields; every text is escaped (terminal_text, then
// HTML), and the page runs no script.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher/ops/metrics.hpp"

namespace outbox {

// Settled rows of one destination, as cumulative counts or as a difference.
struct settled_counts {
  std::uint64_t delivered = 0;
  std::uint64_t retried = 0;  // attempts that failed and will be tried again
  std::uint64_t failed = 0;   // dead or rejected
};

// "In the last hour" from the in-process counters: a sample of the cumulative
// counts once a minute, kept for an hour. The window is 60 to 61 minutes long
// (the sample just older than an hour is the baseline); younger than an hour,
// it starts with the process (counters are 0 then).
class delivery_history {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::minutes window{60};
  static constexpr std::chrono::seconds resolution{60};

  explicit delivery_history(clock::time_point started);
  // Records `m`'s counts at `now` unless the newest sample is younger than `resolution`.
  void sample(const metrics& m, clock::time_point now);
  // Counts settled since the baseline.
  [[nodiscard]] settled_counts recent(const metrics& m, const metrics::destination_key& k) const;
  // True once the baseline is a full window old (the page then says "last hour").
  [[nodiscard]] bool full_window(clock::time_point now) const;
  [[nodiscard]] clock::time_point baseline_at() const { return samples_.front().at; }

  [[nodiscard]] static settled_counts totals(const metrics& m, const metrics::destination_key& k);

 private:
  struct entry {
    clock::time_point at;
    std::map<metrics::destination_key, settled_counts> totals;
  };
  std::deque<entry> samples_;  // oldest first; never empty
};

// /status?provider=P&destination=NAME (a trailing * matches a prefix)&state=S.
struct status_page_filter {
  std::string provider;
  std::string destination;
  std::string state;  // one of status_page_states()
  [[nodiscard]] bool any() const { return !provider.empty() || !destination.empty() || !state.empty(); }
  [[nodiscard]] bool matches(const metrics::destination_key& k, const destination_view& v) const;
};
[[nodiscard]] status_page_filter parse_status_query(std::string_view target);
// delivering, paused (on-call), automatic, circuit-open, unusable (a registry
// entry this process cannot use), not-configured (rows naming no destination).
[[nodiscard]] const std::vector<std::string>& status_page_states();
[[nodiscard]] std::string status_state_of(const destination_view& v);

struct status_page_input {
  const metrics& m;
  const delivery_history& history;
  std::pair<bool, std::string> readiness;
  std::chrono::system_clock::time_point now;
  std::chrono::steady_clock::time_point steady_now;
  status_page_filter filter{};
};

// The whole HTML document.
[[nodiscard]] std::string render_status_page(const status_page_input& in);

// `text` for an HTML text node or attribute value: terminal_text (controls,
// bidirectional overrides and bad UTF-8 made visible, at most `max_bytes`), then
// & < > " ' as entities.
[[nodiscard]] std::string html_text(std::string_view text, std::size_t max_bytes = 300);

}  // namespace outbox

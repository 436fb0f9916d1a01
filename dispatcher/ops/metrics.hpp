#pragma once
// In-process metrics rendered in the Prometheus text format (version 0.0.4).
// Updated and read on the engine's one thread, so no locking.
//
// Every series of a destination of the environment or file is exported from the
// start, at 0: `increase()` and `rate()` need a sample before the first event,
// and a gauge that vanishes cannot be told from a scrape that failed. A
// destination of the registry (there may be thousands) has only the series that
// carry a value, so /metrics stays bounded (docs/monitoring.md). Label values
// come from the configuration (rows naming anything else are counted as "unknown").
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "dispatcher/ops/process_stats.hpp"

namespace outbox {

class histogram {
 public:
  // Upper bounds in seconds, from 1 ms to 30 s: provider APIs live in this range.
  static constexpr std::array<double, 14> bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,  0.5,    1,     2.5,  5,     10,   30};
  void observe(double seconds);
  // Appends the _bucket/_sum/_count lines; `labels` is "" or `a="b",c="d"`.
  void render(std::string& out, const std::string& name, const std::string& labels) const;
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  void merge(const histogram& other);

 private:
  std::array<std::uint64_t, bounds.size()> counts_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

// The destination label of the request histogram every registry destination of a
// provider shares (not a destination name: names are [a-z0-9_]).
inline constexpr std::string_view registry_histogram = "(registry)";

// The outcomes an attempt can be settled with (the attempts log's names).
inline constexpr std::array<std::string_view, 8> delivery_outcomes{"delivered", "retry",  "dead",     "rejected",
                                                                   "held",      "paused", "released", "abandoned"};
// The states outbox_rows reports (sent is not counted).
inline constexpr std::array<std::string_view, 4> open_row_states{"pending", "sending", "dead", "held"};

// How a configured destination stands right now, for /status.
struct destination_view {
  std::string state;   // delivering, probing, paused, paused (automatic), circuit open
  std::string reason;  // why it is not open; empty when open
  std::optional<std::chrono::system_clock::time_point> reopens_at;  // an automatic pause's end
  // The pinned API version's announced sunset (providers/api_versions.hpp), in seconds
  // from the snapshot (negative once past); nullopt when none is announced.
  std::optional<double> api_sunset_seconds;
  std::string api_sunset_warning;  // set within the warning window: the line `status` and the log show
  // When it stopped delivering (the first of a run of pauses and probes;
  // an on-call pause: when this process learnt of it); nullopt while delivering.
  std::optional<std::chrono::system_clock::time_point> paused_since;
  // A destination of the environment or file has every series from the start, at 0;
  // one of the registry (there may be thousands) only the series that carry a value.
  bool zero_filled = true;
};

// A live dispatcher as its heartbeat shows it (sql/0006_fleet.sql), this one included.
struct fleet_member {
  std::string instance;
  std::string host;
  std::string last_seen;  // RFC 3339 UTC
  // Its automatic pauses (provider/destination -> "since T: reason"): on-call
  // pauses apply to every dispatcher and need no list.
  std::map<std::pair<std::string, std::string>, std::string> automatic_pauses;
};

// The last failure seen for a destination (the settled row's error text, never its payload).
struct error_note {
  std::string message;
  std::chrono::system_clock::time_point at;
};

struct metrics {
  using destination_key = std::pair<std::string, std::string>;            // provider, destination
  using outcome_key = std::tuple<std::string, std::string, std::string>;  // + outcome

  using field_key = std::tuple<std::string, std::string, std::string, std::string>;  // + field, reason

  std::map<outcome_key, std::uint64_t> deliveries;         // settled rows by outcome
  std::map<field_key, std::uint64_t> fields_dropped;       // per attempt: fields a provider left out
  std::map<field_key, std::uint64_t> field_warnings;       // per delivered event: fields the provider could not use
  std::map<outcome_key, std::uint64_t> match_keys;         // delivered rows carrying each match key (outcome = key)
  std::map<outcome_key, std::uint64_t> provider_statuses;  // reconciled rows by processing status
  std::map<destination_key, histogram> request_seconds;
  std::map<destination_key, std::uint64_t> requests;
  // Requests written whole on a kept-alive connection that died unanswered, sent again on a fresh one.
  std::map<destination_key, std::uint64_t> requests_resent;
  histogram claim_seconds;
  histogram settle_seconds;
  std::uint64_t claimed = 0;
  std::uint64_t reclaimed = 0;
  std::uint64_t personal_data_erased = 0;  // final rows whose personal data the retention erased
  std::uint64_t lease_expiries = 0;        // rows reset by the sweeper
  std::uint64_t lease_lost = 0;
  std::uint64_t orphans_released = 0;  // rows of claims whose answer was lost, released after a reconnect
  std::uint64_t listener_reconnects = 0;
  std::uint64_t notifications = 0;
  std::uint64_t wake_awake_transitions = 0;   // adaptive wake mode: published "awake"
  std::uint64_t wake_asleep_transitions = 0;  // ... and withdrew it
  bool wake_awake = false;
  std::uint64_t db_errors = 0;
  std::map<std::string, std::int64_t> rows_by_state;  // refreshed by the maintenance loop
  double oldest_due_seconds = 0;
  std::set<destination_key> paused;
  std::map<destination_key, double> delivery_lag_seconds;  // age of the oldest unsent row by created_at (maintenance)
  // Unsent rows (pending and sending) per destination (maintenance); nullopt until first read.
  std::optional<std::map<destination_key, std::int64_t>> backlog_rows;
  std::map<destination_key, error_note> last_errors;  // per destination, from settled rows
  // Filled by engine::metrics_snapshot: the configured destinations (the label
  // values every series starts from), this process, and its /proc figures.
  std::map<destination_key, destination_view> destinations;
  // Registry destinations this process does not use (disabled, invalid, a secret that does not open), with why.
  std::map<destination_key, std::string> registry_unusable;
  std::string instance;
  // Live dispatchers, re-read by the maintenance loop each sweep interval (empty
  // before the first read or on a schema without heartbeats).
  std::vector<fleet_member> fleet;
  std::optional<process_stats> process;
  bool database_up = false;
  bool listener_up = false;
  std::int64_t in_flight = 0;

  [[nodiscard]] std::string render() const;
  void render_conversions(std::string& out) const;
  void render_requests(std::string& out) const;
  void render_destination_gauges(std::string& out) const;
  void render_registry(std::string& out) const;
  void render_process(std::string& out) const;
  // One settled row: counts its outcome and, for a failure (retry, dead,
  // rejected, held), keeps its error as the destination's last error.
  void note_settled(const destination_key& k, const std::string& outcome, const std::string& error,
                    std::chrono::system_clock::time_point at);
  // Settled rows with this outcome, over every destination.
  [[nodiscard]] std::uint64_t total(const std::string& outcome) const;
};

// Escapes a label value (backslash, quote, newline) per the exposition format.
[[nodiscard]] std::string label_value(const std::string& v);

}  // namespace outbox

#pragma once
// In-process metrics rendered in the Prometheus text format (version 0.0.4).
// Updated and read on the engine's one thread, so no locking.
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace outbox {

class histogram {
 public:
  // Upper bounds in seconds, from 1 ms to 30 s: provider APIs live in this range.
  static constexpr std::array<double, 14> bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,  0.5,    1,     2.5,  5,     10,   30};
  void observe(double seconds);
  // Appends the _bucket/_sum/_count lines; `labels` is "" or `a="b",c="d"`.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::array<std::uint64_t, bounds.size()> counts_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

struct metrics {
  using destination_key = std::pair<std::string, std::string>;                      // provider, destination
  using outcome_key = std::tuple<std::string, std::string, std::string>;             // + outcome

  using field_key = std::tuple<std::string, std::string, std::string, std::string>;  // + field, reason

  std::map<outcome_key, std::uint64_t> deliveries;  // settled rows by outcome
  std::map<field_key, std::uint64_t> fields_dropped;  // per attempt: fields a provider left out
  std::map<outcome_key, std::uint64_t> match_keys;    // delivered rows carrying each match key (outcome = key)
  std::map<outcome_key, std::uint64_t> provider_statuses;  // reconciled rows by processing status
  std::map<destination_key, histogram> request_seconds;
  std::map<destination_key, std::uint64_t> requests;
  histogram claim_seconds;
  histogram settle_seconds;
  std::uint64_t claimed = 0;
  std::uint64_t reclaimed = 0;
  std::uint64_t lease_expiries = 0;  // rows reset by the sweeper
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
  bool database_up = false;
  bool listener_up = false;
  std::int64_t in_flight = 0;

  [[nodiscard]] std::string render() const;
  void render_conversions(std::string& out) const;
  // Settled rows with this outcome, over every destination.
  [[nodiscard]] std::uint64_t total(const std::string& outcome) const;
};

// Escapes a label value (backslash, quote, newline) per the exposition format.
[[nodiscard]] std::string label_value(const std::string& v);

}  // namespace outbox

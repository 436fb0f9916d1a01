#pragma once
// The rows this process holds under a lease, from claim until their outcome is
// recorded (or their lease is certainly gone). The claimer adds, the sender
// marks what it started, the settler removes; the maintenance loop renews the
// leases of every row here, including rows whose outcome waits for the database.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatcher/engine/settlement_plan.hpp"

namespace outbox {

struct in_flight_row {
  row_ticket ticket;
  std::int64_t lead_project_id = 0;
  std::string provider;  // metric labels: the row's, or "unknown" when not configured
  std::string destination;
  bool started = false;                 // request bytes may be on the wire
  bool outcome_queued = false;          // the settler has its outcome
  bool abandoned = false;               // shutdown decided its fate; a late result is ignored
  bool hold_on_doubt = false;           // its destination holds rows after an uncertain attempt
  bool probe = false;                   // sent alone to test a destination after a pause
  std::vector<std::string> dropped;     // fields the provider left out ("field: reason (detail)")
  std::vector<std::string> match_keys;  // match keys the request carries, counted once it is delivered
};

class in_flight_table {
 public:
  // Returns false (and changes nothing but the token) when the row is already
  // here: our own lease expired during a database outage and we claimed it again.
  bool add(in_flight_row row);
  [[nodiscard]] in_flight_row* find(std::int64_t id);
  void erase(std::int64_t id) { rows_.erase(id); }
  [[nodiscard]] std::size_t size() const noexcept { return rows_.size(); }
  [[nodiscard]] bool empty() const noexcept { return rows_.empty(); }

  // Ids and current lease tokens of every row, for lease renewal.
  [[nodiscard]] std::pair<std::vector<std::int64_t>, std::vector<std::string>> leases() const;
  // The distinct lease tokens in use (rows under any other token of ours are orphans).
  [[nodiscard]] std::vector<std::string> tokens() const;

  template <class F>
  void for_each(F&& f) {
    for (auto& [id, row] : rows_) f(row);
  }

 private:
  std::unordered_map<std::int64_t, in_flight_row> rows_;
};

}  // namespace outbox

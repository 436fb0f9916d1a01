#include "dispatcher/engine/in_flight.hpp"

#include <set>

namespace outbox {

bool in_flight_table::add(in_flight_row row) {
  const auto it = rows_.find(row.ticket.id);
  if (it == rows_.end()) {
    rows_.emplace(row.ticket.id, std::move(row));
    return true;
  }
  // Rebind: the outcome waiting (or the request running) settles under the new lease.
  it->second.ticket.lease_token = row.ticket.lease_token;
  return false;
}

in_flight_row* in_flight_table::find(std::int64_t id) {
  const auto it = rows_.find(id);
  return it == rows_.end() ? nullptr : &it->second;
}

std::pair<std::vector<std::int64_t>, std::vector<std::string>> in_flight_table::leases() const {
  std::pair<std::vector<std::int64_t>, std::vector<std::string>> out;
  out.first.reserve(rows_.size());
  out.second.reserve(rows_.size());
  for (const auto& [id, row] : rows_) {
    out.first.push_back(id);
    out.second.push_back(row.ticket.lease_token);
  }
  return out;
}

std::vector<std::string> in_flight_table::tokens() const {
  std::set<std::string> distinct;
  for (const auto& [id, row] : rows_) distinct.insert(row.ticket.lease_token);
  return {distinct.begin(), distinct.end()};
}

}  // namespace outbox

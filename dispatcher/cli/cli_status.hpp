#pragma once
// `dispatcher status`: the parts in files of their own.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace outbox::cli {

// --provider P, --destination NAME (a trailing * matches a prefix), --state S.
struct status_filter {
  std::string provider;
  std::string destination;
  std::string state;  // one of status_states()
  [[nodiscard]] bool any() const { return !provider.empty() || !destination.empty() || !state.empty(); }
};

// The states --state takes: paused (by on-call), automatic (paused by a
// dispatcher, a circuit included), circuit-open, unusable (a registry entry no
// dispatcher can use), due, dead, held (has such rows).
[[nodiscard]] const std::vector<std::string>& status_states();

// How many destinations are in each state: {with_rows, paused, with_due, with_dead,
// with_held, automatic, circuit-open, unusable}.
[[nodiscard]] nlohmann::json destination_summary(const nlohmann::json& status);

// Keeps, in every per-destination list of the status, the destinations the filter names.
void filter_status(nlohmann::json& status, const status_filter& filter);

}  // namespace outbox::cli

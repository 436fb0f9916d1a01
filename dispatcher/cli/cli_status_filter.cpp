// `dispatcher status --provider/--destination/--state`: narrows every
// per-destination list of the status to the destinations asked for, and counts
// the destinations by state for the summary line (with a thousand of them, the
// lists are read through a filter, the summary at a glance).
#include "dispatcher/cli/cli_status.hpp"

#include <map>
#include <set>

#include "dispatcher/ops/name_pattern.hpp"

namespace outbox::cli {
namespace {

using key = std::pair<std::string, std::string>;

key key_of(const nlohmann::json& j) { return {j.value("provider", ""), j.value("destination", "")}; }

long long number(const nlohmann::json& j, const char* name) { return j.contains(name) ? j[name].get<long long>() : 0; }

// The automatic pauses every live dispatcher reports, by destination: "registry"
// (a registry entry it cannot use), "circuit open" or "automatic".
std::map<key, std::string> automatic_states(const nlohmann::json& s) {
  std::map<key, std::string> out;
  for (const auto& d : s.value("dispatchers", nlohmann::json::array())) {
    if (!d.value("live", false)) continue;
    for (const auto& p : d.value("automatic_pauses", nlohmann::json::array())) {
      const bool registry = p.value("kind", "") == "registry";
      const bool circuit = p.value("reason", "").starts_with("circuit open");
      out[key_of(p)] = registry ? "unusable" : circuit ? "circuit-open" : "automatic";
    }
  }
  return out;
}

// The destinations in `state`: paused (by on-call), automatic, circuit-open,
// unusable, or one with rows due, dead or held.
std::set<key> in_state(const nlohmann::json& s, const std::string& state) {
  std::set<key> out;
  if (state == "paused") {
    for (const auto& p : s["paused_destinations"]) out.insert(key_of(p));
  } else if (state == "automatic" || state == "circuit-open" || state == "unusable") {
    for (const auto& [k, v] : automatic_states(s)) {
      if (v == state || (state == "automatic" && v == "circuit-open")) out.insert(k);
    }
  } else {
    for (const auto& d : s["by_destination"]) {
      if (number(d, state.c_str()) > 0) out.insert(key_of(d));
    }
  }
  return out;
}

bool matches(const status_filter& f, const key& k, const std::optional<std::set<key>>& wanted) {
  if (!f.provider.empty() && k.first != f.provider) return false;
  if (!f.destination.empty() && !matches_name_pattern(k.second, f.destination)) return false;
  return !wanted || wanted->contains(k);
}

void keep_matching(nlohmann::json& list, const status_filter& f, const std::optional<std::set<key>>& wanted) {
  if (!list.is_array()) return;
  nlohmann::json kept = nlohmann::json::array();
  for (auto& item : list) {
    if (matches(f, key_of(item), wanted)) kept.push_back(std::move(item));
  }
  list = std::move(kept);
}

}  // namespace

const std::vector<std::string>& status_states() {
  static const std::vector<std::string> states{"paused", "automatic", "circuit-open", "unusable",
                                               "due",    "dead",      "held"};
  return states;
}

nlohmann::json destination_summary(const nlohmann::json& s) {
  nlohmann::json out = {{"with_rows", s["by_destination"].size()}, {"paused", s["paused_destinations"].size()}};
  for (const auto& state : {"due", "dead", "held"}) out["with_" + std::string(state)] = in_state(s, state).size();
  for (const auto& state : {"automatic", "circuit-open", "unusable"}) out[state] = in_state(s, state).size();
  return out;
}

void filter_status(nlohmann::json& s, const status_filter& f) {
  if (!f.any()) return;
  std::optional<std::set<key>> wanted;
  if (!f.state.empty()) wanted = in_state(s, f.state);
  for (const char* list : {"by_destination", "paused_destinations", "delivery_lag", "conversions", "api_versions"}) {
    if (s.contains(list)) keep_matching(s[list], f, wanted);
  }
  if (s.contains("dispatchers")) {
    for (auto& d : s["dispatchers"]) {
      if (d.contains("automatic_pauses")) keep_matching(d["automatic_pauses"], f, wanted);
    }
  }
  if (s.contains("oldest_due") && !s["oldest_due"].is_null() && !matches(f, key_of(s["oldest_due"]), wanted)) {
    s["oldest_due"] = nullptr;  // the oldest due row of another destination says nothing about these
  }
  s["filter"] = {{"provider", f.provider}, {"destination", f.destination}, {"state", f.state}};
}

}  // namespace outbox::cli

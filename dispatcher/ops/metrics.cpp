#include "dispatcher/ops/metrics.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "dispatcher/ops/version.hpp"
#include "providers/user_data/match_keys.hpp"

namespace outbox {
namespace {

// The shortest text that reads back as the same double (0.05, not
// 0.050000000000000003); Prometheus' spellings for the non-finite values.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

// Bucket bounds as written by hand (0.005, not 0.0050000000000000001).
std::string bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += ' ';
  out += number(v);
  out += '\n';
}

std::string dest_labels(const metrics::destination_key& k) {
  return "provider=\"" + label_value(k.first) + "\",destination=\"" + label_value(k.second) + "\"";
}

// `counts` plus a 0 for each zero-filled destination and each of `values` not yet counted.
template <class Values>
std::map<metrics::outcome_key, std::uint64_t> from_zero(
    std::map<metrics::outcome_key, std::uint64_t> counts,
    const std::map<metrics::destination_key, destination_view>& dests, const Values& values) {
  for (const auto& [k, view] : dests) {
    if (!view.zero_filled) continue;
    for (const auto v : values) counts.try_emplace({k.first, k.second, std::string(v)}, 0);
  }
  return counts;
}

// `values` plus a default (0, an empty histogram) for each zero-filled destination.
template <class T>
std::map<metrics::destination_key, T> from_zero(std::map<metrics::destination_key, T> values,
                                                const std::map<metrics::destination_key, destination_view>& dests) {
  for (const auto& [k, view] : dests) {
    if (view.zero_filled) values.try_emplace(k);
  }
  return values;
}

}  // namespace

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void histogram::observe(double seconds) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (seconds <= bounds[i]) ++counts_[i];
  }
  ++count_;
  sum_ += seconds;
}

void histogram::merge(const histogram& other) {
  for (std::size_t i = 0; i < bounds.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
}

void histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    sample(out, name + "_bucket", labels + sep + "le=\"" + bound(bounds[i]) + "\"", static_cast<double>(counts_[i]));
  }
  sample(out, name + "_bucket", labels + sep + "le=\"+Inf\"", static_cast<double>(count_));
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, static_cast<double>(count_));
}

void metrics::note_settled(const destination_key& k, const std::string& outcome, const std::string& error,
                           std::chrono::system_clock::time_point at) {
  ++deliveries[{k.first, k.second, outcome}];
  // Put-backs (paused, released, abandoned) say what the dispatcher did, not what failed.
  const bool failure = outcome == "retry" || outcome == "dead" || outcome == "rejected" || outcome == "held";
  if (failure && !error.empty()) last_errors[k] = {error, at};
}

std::uint64_t metrics::total(const std::string& outcome) const {
  std::uint64_t n = 0;
  for (const auto& [k, v] : deliveries) n += std::get<2>(k) == outcome ? v : 0;
  return n;
}

// What happened to the conversions' content: dropped fields, match keys, processing results.
void metrics::render_conversions(std::string& out) const {
  header(out, "outbox_fields_dropped_total", "counter",
         "Fields a provider left out of a request (the conversion was still sent), by field and reason; per attempt.");
  for (const auto& [k, n] : fields_dropped) {
    sample(out, "outbox_fields_dropped_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",field=\"" + label_value(std::get<2>(k)) + "\",reason=\"" +
               label_value(std::get<3>(k)) + "\"",
           double(n));
  }
  header(out, "outbox_field_warnings_total", "counter",
         "Fields the provider accepted the event without, as its answer said (Data Manager fieldWarnings), by "
         "field and reason; per delivered event.");
  for (const auto& [k, n] : field_warnings) {
    sample(out, "outbox_field_warnings_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",field=\"" + label_value(std::get<2>(k)) + "\",reason=\"" +
               label_value(std::get<3>(k)) + "\"",
           double(n));
  }
  header(out, "outbox_match_key_events_total", "counter",
         "Delivered events that carried each match key; divide by outbox_deliveries_total{outcome=\"delivered\"}.");
  for (const auto& [k, n] : from_zero(match_keys, destinations, providers::match_key::all)) {
    sample(out, "outbox_match_key_events_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",key=\"" + label_value(std::get<2>(k)) + "\"", double(n));
  }
  header(out, "outbox_provider_status_rows_total", "counter",
         "Rows whose asynchronous processing result was read back from the provider, by status.");
  for (const auto& [k, n] : provider_statuses) {
    sample(out, "outbox_provider_status_rows_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",status=\"" + label_value(std::get<2>(k)) + "\"",
           double(n));
  }
}

// Per destination gauges: every configured destination has a sample, 0 included.
void metrics::render_destination_gauges(std::string& out) const {
  header(out, "outbox_destination_paused", "gauge",
         "1 while a destination is paused (on-call, configuration, credentials refused, circuit open), else 0.");
  auto all_paused = from_zero(std::map<destination_key, int>{}, destinations);
  for (const auto& k : paused) all_paused[k] = 1;
  for (const auto& [k, v] : all_paused) sample(out, "outbox_destination_paused", dest_labels(k), v);
  header(out, "outbox_destination_paused_since_timestamp_seconds", "gauge",
         "Unix time at which a paused destination stopped delivering (the first of a run of automatic pauses and "
         "probes; an on-call pause: when this dispatcher applied it); 0 while it delivers.");
  for (const auto& [k, v] : destinations) {
    const double since = v.paused_since ? std::chrono::duration<double>(v.paused_since->time_since_epoch()).count() : 0;
    if (v.zero_filled || v.paused_since)
      sample(out, "outbox_destination_paused_since_timestamp_seconds", dest_labels(k), since);
  }
  header(out, "outbox_api_version_sunset_seconds", "gauge",
         "Seconds until the API version a destination is pinned to stops answering (negative once past); only "
         "destinations whose version has an announced sunset.");
  for (const auto& [k, v] : destinations) {
    if (v.api_sunset_seconds) sample(out, "outbox_api_version_sunset_seconds", dest_labels(k), *v.api_sunset_seconds);
  }
  header(out, "outbox_delivery_lag_seconds", "gauge",
         "Age of the oldest unsent row of a destination by created_at (0 when none): rises while it is paused, "
         "failing or behind.");
  for (const auto& [k, v] : from_zero(delivery_lag_seconds, destinations))
    sample(out, "outbox_delivery_lag_seconds", dest_labels(k), v);
  if (!backlog_rows) return;  // not read from the database yet: no sample rather than a false 0
  header(out, "outbox_backlog_rows", "gauge", "Unsent rows (pending or sending) of a destination.");
  for (const auto& [k, v] : from_zero(*backlog_rows, destinations))
    sample(out, "outbox_backlog_rows", dest_labels(k), double(v));
}

// The registry's destinations: how many are used, and each one that is not.
void metrics::render_registry(std::string& out) const {
  std::size_t used = 0;
  for (const auto& [k, v] : destinations) used += v.zero_filled ? 0 : 1;
  header(out, "outbox_registry_destinations", "gauge",
         "Destinations of the registry (outbox_destination) this dispatcher uses, and those it cannot use "
         "(disabled, invalid, a secret that does not open); the environment's are not counted.");
  sample(out, "outbox_registry_destinations", "state=\"usable\"", double(used));
  sample(out, "outbox_registry_destinations", "state=\"unusable\"", double(registry_unusable.size()));
  header(out, "outbox_registry_destination_unusable", "gauge",
         "1 for each registry destination this dispatcher cannot use; dispatcher status says why. Its rows wait.");
  for (const auto& [k, why] : registry_unusable) sample(out, "outbox_registry_destination_unusable", dest_labels(k), 1);
}

// The metrics every Prometheus client library exports, named as they name them.
void metrics::render_process(std::string& out) const {
  header(out, "outbox_build_info", "gauge", "Always 1; the labels are the dispatcher's version and commit.");
  sample(out, "outbox_build_info",
         "version=\"" + label_value(std::string(version())) + "\",revision=\"" + label_value(std::string(revision())) +
             "\"",
         1);
  if (!process) return;
  header(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
  sample(out, "process_cpu_seconds_total", "", process->cpu_seconds);
  header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  sample(out, "process_resident_memory_bytes", "", double(process->resident_bytes));
  header(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  sample(out, "process_virtual_memory_bytes", "", double(process->virtual_bytes));
  header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
  sample(out, "process_open_fds", "", double(process->open_fds));
  if (process->max_fds > 0) {
    header(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
    sample(out, "process_max_fds", "", double(process->max_fds));
  }
  header(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
  sample(out, "process_start_time_seconds", "", process->start_time_seconds);
}

void metrics::render_requests(std::string& out) const {
  header(out, "outbox_requests_total", "counter", "HTTP requests sent, by destination.");
  for (const auto& [k, n] : from_zero(requests, destinations))
    sample(out, "outbox_requests_total", dest_labels(k), double(n));
  header(out, "outbox_requests_resent_total", "counter",
         "Requests written whole on a kept-alive connection that then closed unanswered, and sent again on a fresh "
         "one: the receiver may have seen them twice (its dedup id covers that). The attempt's note says so.");
  for (const auto& [k, n] : from_zero(requests_resent, destinations))
    sample(out, "outbox_requests_resent_total", dest_labels(k), double(n));
  header(out, "outbox_request_duration_seconds", "histogram",
         "HTTP request latency, by destination; the registry's destinations together per provider, "
         "as destination=\"(registry)\".");
  // 17 series a destination: a thousand registry destinations would carry 17,000.
  std::map<destination_key, histogram> merged;
  for (const auto& [k, h] : from_zero(request_seconds, destinations)) {
    const auto d = destinations.find(k);
    const bool registry = d != destinations.end() && !d->second.zero_filled;
    merged[registry ? destination_key{k.first, std::string(registry_histogram)} : k].merge(h);
  }
  for (const auto& [k, h] : merged) h.render(out, "outbox_request_duration_seconds", dest_labels(k));
}

std::string metrics::render() const {
  std::string out;
  header(out, "outbox_rows", "gauge", "Rows by state (sent is not counted; see dispatcher status).");
  auto rows = rows_by_state;
  for (const auto state : open_row_states) rows.try_emplace(std::string(state), 0);
  for (const auto& [state, n] : rows) sample(out, "outbox_rows", "state=\"" + label_value(state) + "\"", double(n));
  header(out, "outbox_oldest_due_seconds", "gauge",
         "Age of the oldest pending row that is due now, paused destinations left out (0 when none).");
  sample(out, "outbox_oldest_due_seconds", "", oldest_due_seconds);
  header(out, "outbox_deliveries_total", "counter", "Rows settled by this process, by outcome.");
  for (const auto& [k, n] : from_zero(deliveries, destinations, delivery_outcomes)) {
    sample(out, "outbox_deliveries_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",outcome=\"" + label_value(std::get<2>(k)) + "\"",
           double(n));
  }
  render_conversions(out);
  render_requests(out);
  header(out, "outbox_claim_duration_seconds", "histogram", "Claim statement latency.");
  claim_seconds.render(out, "outbox_claim_duration_seconds", "");
  header(out, "outbox_settle_duration_seconds", "histogram", "Settle statement latency (one batch).");
  settle_seconds.render(out, "outbox_settle_duration_seconds", "");
  header(out, "outbox_claimed_total", "counter", "Rows claimed.");
  sample(out, "outbox_claimed_total", "", double(claimed));
  header(out, "outbox_reclaimed_total", "counter", "Rows taken over from an expired lease (a crashed or hung sender).");
  sample(out, "outbox_reclaimed_total", "", double(reclaimed));
  header(out, "outbox_personal_data_erased_total", "counter",
         "Final rows whose personal data was erased at the end of its retention (docs/personal_data.md).");
  sample(out, "outbox_personal_data_erased_total", "", double(personal_data_erased));
  header(out, "outbox_lease_expiries_total", "counter", "Rows whose expired lease the sweeper reset.");
  sample(out, "outbox_lease_expiries_total", "", double(lease_expiries));
  header(out, "outbox_lease_lost_total", "counter", "Outcomes not recorded because another worker owned the row.");
  sample(out, "outbox_lease_lost_total", "", double(lease_lost));
  header(out, "outbox_orphans_released_total", "counter",
         "Rows of claims whose answer was lost with a connection, released after reconnecting.");
  sample(out, "outbox_orphans_released_total", "", double(orphans_released));
  header(out, "outbox_listener_reconnects_total", "counter", "LISTEN connection re-establishments.");
  sample(out, "outbox_listener_reconnects_total", "", double(listener_reconnects));
  header(out, "outbox_notifications_total", "counter", "NOTIFY wake-ups received.");
  sample(out, "outbox_notifications_total", "", double(notifications));
  header(out, "outbox_wake_transitions_total", "counter",
         "Adaptive wake mode: times this dispatcher published that it is awake (draining) or withdrew it.");
  sample(out, "outbox_wake_transitions_total", "to=\"awake\"", double(wake_awake_transitions));
  sample(out, "outbox_wake_transitions_total", "to=\"asleep\"", double(wake_asleep_transitions));
  header(out, "outbox_wake_awake", "gauge",
         "1 while this dispatcher is marked awake, so the insert trigger skips pg_notify.");
  sample(out, "outbox_wake_awake", "", wake_awake ? 1.0 : 0.0);
  header(out, "outbox_database_errors_total", "counter", "Failed database operations (each is retried).");
  sample(out, "outbox_database_errors_total", "", double(db_errors));
  header(out, "outbox_in_flight_rows", "gauge", "Rows claimed by this process and not yet settled.");
  sample(out, "outbox_in_flight_rows", "", double(in_flight));
  render_destination_gauges(out);
  render_registry(out);
  header(out, "outbox_database_up", "gauge", "1 when the last claim reached the database.");
  sample(out, "outbox_database_up", "", database_up ? 1 : 0);
  header(out, "outbox_listener_up", "gauge", "1 while LISTEN is active (0 in poll mode).");
  sample(out, "outbox_listener_up", "", listener_up ? 1 : 0);
  render_process(out);
  return out;
}

}  // namespace outbox

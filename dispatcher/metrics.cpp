#include "dispatcher/metrics.hpp"

#include <cstdio>

namespace outbox {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
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

void histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    sample(out, name + "_bucket", labels + sep + "le=\"" + bound(bounds[i]) + "\"", static_cast<double>(counts_[i]));
  }
  sample(out, name + "_bucket", labels + sep + "le=\"+Inf\"", static_cast<double>(count_));
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, static_cast<double>(count_));
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
  header(out, "outbox_match_key_events_total", "counter",
         "Delivered events that carried each match key; divide by outbox_deliveries_total{outcome=\"delivered\"}.");
  for (const auto& [k, n] : match_keys) {
    sample(out, "outbox_match_key_events_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",key=\"" + label_value(std::get<2>(k)) + "\"", double(n));
  }
  header(out, "outbox_provider_status_rows_total", "counter",
         "Rows whose asynchronous processing result was read back from the provider, by status.");
  for (const auto& [k, n] : provider_statuses) {
    sample(out, "outbox_provider_status_rows_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",status=\"" + label_value(std::get<2>(k)) + "\"", double(n));
  }
}

std::string metrics::render() const {
  std::string out;
  header(out, "outbox_rows", "gauge", "Rows by state (sent is not counted; see dispatcher status).");
  for (const auto& [state, n] : rows_by_state) sample(out, "outbox_rows", "state=\"" + label_value(state) + "\"", double(n));
  header(out, "outbox_oldest_due_seconds", "gauge", "Age of the oldest pending row that is due now (0 when none).");
  sample(out, "outbox_oldest_due_seconds", "", oldest_due_seconds);
  header(out, "outbox_deliveries_total", "counter", "Rows settled by this process, by outcome.");
  for (const auto& [k, n] : deliveries) {
    sample(out, "outbox_deliveries_total",
           dest_labels({std::get<0>(k), std::get<1>(k)}) + ",outcome=\"" + label_value(std::get<2>(k)) + "\"", double(n));
  }
  render_conversions(out);
  header(out, "outbox_requests_total", "counter", "HTTP requests sent, by destination.");
  for (const auto& [k, n] : requests) sample(out, "outbox_requests_total", dest_labels(k), double(n));
  header(out, "outbox_request_duration_seconds", "histogram", "HTTP request latency, by destination.");
  for (const auto& [k, h] : request_seconds) h.render(out, "outbox_request_duration_seconds", dest_labels(k));
  header(out, "outbox_claim_duration_seconds", "histogram", "Claim statement latency.");
  claim_seconds.render(out, "outbox_claim_duration_seconds", "");
  header(out, "outbox_settle_duration_seconds", "histogram", "Settle statement latency (one batch).");
  settle_seconds.render(out, "outbox_settle_duration_seconds", "");
  header(out, "outbox_claimed_total", "counter", "Rows claimed.");
  sample(out, "outbox_claimed_total", "", double(claimed));
  header(out, "outbox_reclaimed_total", "counter", "Rows taken over from an expired lease (a crashed or hung sender).");
  sample(out, "outbox_reclaimed_total", "", double(reclaimed));
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
  header(out, "outbox_destination_paused", "gauge", "1 for each paused destination.");
  for (const auto& k : paused) sample(out, "outbox_destination_paused", dest_labels(k), 1);
  header(out, "outbox_database_up", "gauge", "1 when the last claim reached the database.");
  sample(out, "outbox_database_up", "", database_up ? 1 : 0);
  header(out, "outbox_listener_up", "gauge", "1 while LISTEN is active (0 in poll mode).");
  sample(out, "outbox_listener_up", "", listener_up ? 1 : 0);
  return out;
}

}  // namespace outbox

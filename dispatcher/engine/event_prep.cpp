#include "dispatcher/engine/event_prep.hpp"

namespace outbox {

namespace {

// jsonb prints an object as `{...}`, never with leading blanks.
bool prints_as_object(const std::string& payload) { return !payload.empty() && payload.front() == '{'; }

}  // namespace

prepared_event prepare_event(const db::claimed_row& row, std::size_t max_payload_bytes, payload_use use) {
  if (row.payload.size() > max_payload_bytes) {
    return "payload is " + std::to_string(row.payload.size()) + " bytes, over the limit of " +
           std::to_string(max_payload_bytes) + " (OUTBOX_MAX_PAYLOAD_BYTES)";
  }
  if (row.idempotency_key.empty()) return std::string("idempotency_key is empty");
  if (row.event_name.empty()) return std::string("event_name is empty");
  nlohmann::json payload;
  if (use == payload_use::parsed || !prints_as_object(row.payload)) {
    payload = nlohmann::json::parse(row.payload, nullptr, false);
    if (payload.is_discarded()) return std::string("payload is not valid JSON");
    if (!payload.is_object()) return "payload must be a JSON object, got " + std::string(payload.type_name());
  }
  providers::outbound_event event;
  event.row_id = row.id;
  event.idempotency_key = row.idempotency_key;
  event.event_name = row.event_name;
  event.lead_project_id = row.lead_project_id;
  event.payload = std::move(payload);
  event.payload_text = row.payload;
  event.attempt = row.attempts;
  return event;
}

}  // namespace outbox

#include "tests/support/store_harness.hpp"

namespace outbox::test {

std::optional<std::int64_t> memory_harness::enqueue(std::int64_t lead, const std::string& provider,
                                                    const std::string& event, const std::string& payload,
                                                    const std::string& destination) {
  if (!store_.enqueue(lead, provider, event, payload, destination)) return std::nullopt;
  return store_.ids().back();
}

stored_row memory_harness::read(std::int64_t id) {
  const auto& r = store_.row(id);
  return {r.state,
          r.attempts,
          r.lease_owner.value_or(""),
          r.lease_token.has_value() && r.state == "sending",
          r.last_error,
          r.last_http_status,
          r.next_attempt_at <= clock_.system_now()};
}

long long memory_harness::attempts_logged(std::int64_t id, const std::string& outcome) {
  long long n = 0;
  for (const auto& a : store_.attempts(id)) n += a.outcome == outcome;
  return n;
}

std::optional<std::int64_t> pg_harness::enqueue(std::int64_t lead, const std::string& provider,
                                                const std::string& event, const std::string& payload,
                                                const std::string& destination) {
  const auto inserted = db_.query("SELECT enqueue_event_delivery($1::bigint, $2, $3, $4::jsonb, $5)",
                                  {std::to_string(lead), provider, event, payload, destination});
  if (inserted.text(0, 0) != "t") return std::nullopt;
  return db_.scalar(
      "SELECT id FROM event_delivery WHERE lead_project_id = $1::bigint AND provider = $2 AND event_name = $3",
      {std::to_string(lead), provider, event});
}

stored_row pg_harness::read(std::int64_t id) {
  const auto r = db_.query(
      "SELECT state, attempts, coalesce(lease_owner, ''), (state = 'sending' AND lease_token IS NOT NULL), "
      "coalesce(last_error, ''), last_http_status, next_attempt_at <= now() FROM event_delivery WHERE id = $1",
      {std::to_string(id)});
  stored_row out;
  out.state = r.text(0, 0);
  out.attempts = std::stoi(std::string(r.text(0, 1)));
  out.lease_owner = r.text(0, 2);
  out.has_token = r.text(0, 3) == "t";
  out.last_error = r.text(0, 4);
  if (!r.is_null(0, 5)) out.last_http_status = std::stoi(std::string(r.text(0, 5)));
  out.due = r.text(0, 6) == "t";
  return out;
}

std::string pg_harness::idempotency_key(std::int64_t id) {
  return std::string(
      db_.query("SELECT idempotency_key FROM event_delivery WHERE id = $1", {std::to_string(id)}).text(0, 0));
}

long long pg_harness::attempts_logged(std::int64_t id, const std::string& outcome) {
  return db_.scalar("SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1 AND outcome = $2",
                    {std::to_string(id), outcome});
}

void pg_harness::pass(std::chrono::seconds d) {
  const std::string s = std::to_string(d.count());
  db_.query(
      "UPDATE event_delivery SET next_attempt_at = next_attempt_at - $1::int * interval '1 second', "
      "lease_expires_at = lease_expires_at - $1::int * interval '1 second', "
      "created_at = created_at - $1::int * interval '1 second'",
      {s});
}

void pg_harness::pause(const std::string& provider, const std::string& destination) {
  db_.query(
      "INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) VALUES ($1, $2, 'x', 'test')",
      {provider, destination});
}

}  // namespace outbox::test

#include "dispatcher/engine/settlement_plan.hpp"

namespace outbox {
namespace {

db::settlement base(const row_ticket& row) {
  db::settlement s;
  s.id = row.id;
  s.lease_token = row.lease_token;
  s.attempt = row.attempt;
  return s;
}

}  // namespace

db::settlement plan_settlement(const row_ticket& row, const providers::event_outcome& outcome,
                               const attempt_facts& facts, const backoff_policy& policy,
                               std::chrono::system_clock::time_point now, double random01) {
  auto s = base(row);
  s.started_at = facts.started_at;
  s.duration = facts.duration;
  s.unanswered_first_try = facts.unanswered_first_try;
  s.http_status = facts.http_status;
  s.response_excerpt = facts.response_excerpt;
  switch (outcome.kind) {
    case providers::outcome_kind::delivered:
      s.state = db::settle_state::sent;
      s.outcome = "delivered";
      return s;
    case providers::outcome_kind::dead:
      s.state = db::settle_state::dead;
      s.outcome = "dead";
      s.error = outcome.error;
      return s;
    case providers::outcome_kind::retry: break;
  }
  const auto decision = next_attempt(policy, row.attempt, now, row.created_at, outcome.retry_after, random01);
  if (decision.give_up()) {
    s.state = db::settle_state::dead;
    s.outcome = "dead";
    s.error = outcome.error + "; gave up: " + decision.give_up_reason;
    return s;
  }
  s.state = db::settle_state::pending;
  s.outcome = "retry";
  s.error = outcome.error;
  s.retry_delay = std::max(std::chrono::milliseconds(0),
                           std::chrono::duration_cast<std::chrono::milliseconds>(*decision.next_attempt_at - now));
  return s;
}

db::settlement plan_putback(const row_ticket& row, std::chrono::milliseconds delay, std::string outcome,
                            std::string reason, std::chrono::system_clock::time_point now) {
  auto s = base(row);
  s.state = db::settle_state::pending;
  s.refund_attempt = true;
  s.retry_delay = delay;
  s.started_at = now;
  s.outcome = std::move(outcome);
  s.error = std::move(reason);
  return s;
}

db::settlement plan_paused_attempt(const row_ticket& row, const attempt_facts& facts, const std::string& reason) {
  auto s = plan_putback(row, std::chrono::milliseconds(0), "paused", "destination paused: " + reason, facts.started_at);
  s.log_attempt = true;  // a real request: on-call wants to see what the API answered
  s.started_at = facts.started_at;
  s.duration = facts.duration;
  s.http_status = facts.http_status;
  s.response_excerpt = facts.response_excerpt;
  s.note = facts.note;
  s.unanswered_first_try = facts.unanswered_first_try;
  return s;
}

db::settlement plan_hold(const row_ticket& row, std::string reason, std::chrono::system_clock::time_point now) {
  auto s = base(row);
  s.state = db::settle_state::held;
  s.refund_attempt = true;  // nothing was sent by this attempt
  s.started_at = now;
  s.outcome = "held";
  s.error = std::move(reason);
  return s;
}

db::settlement plan_rejection(const row_ticket& row, std::string reason, std::chrono::system_clock::time_point now) {
  auto s = base(row);
  s.state = db::settle_state::dead;
  s.started_at = now;
  s.outcome = "rejected";
  s.error = std::move(reason);
  return s;
}

}  // namespace outbox

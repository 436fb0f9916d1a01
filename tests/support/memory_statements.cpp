#include "tests/support/memory_statements.hpp"

#include <algorithm>
#include <cmath>

namespace outbox::test {
namespace {

using std::chrono::milliseconds;

bool listed(std::span<const std::string> keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// PostgreSQL's (extract(epoch FROM t - now()) * 1000)::bigint: rounded to the millisecond.
milliseconds rounded_ms(engine_clock::system_time::duration d) {
  return milliseconds{std::llround(std::chrono::duration<double, std::milli>(d).count())};
}

}  // namespace

// A row's place in the claim's schedule order: next_attempt_at in microseconds, id.
std::pair<std::int64_t, std::int64_t> memory_statements::position_of(const memory_row& r) {
  return {std::chrono::duration_cast<std::chrono::microseconds>(r.next_attempt_at.time_since_epoch()).count(), r.id};
}

// Where the claim's one ordered scan starts, as sql::claim computes it (nullopt: the beginning).
std::optional<std::pair<std::int64_t, std::int64_t>> memory_statements::scan_start(const db::claim_request& req) const {
  if (!req.scan_from || !req.one_ordered_scan()) return std::nullopt;
  const auto step_back =
      std::chrono::duration_cast<std::chrono::microseconds>((now_ - db::claim_scan_step_back).time_since_epoch())
          .count();
  if (req.scan_from->due_us < step_back) return std::make_pair(req.scan_from->due_us, req.scan_from->id);
  return std::make_pair(step_back, std::int64_t{0});
}

db::claim_batch memory_statements::claim(const db::claim_request& req) {
  s_.claim_requests.push_back(req);
  const auto start = scan_start(req);
  std::vector<memory_row*> due;
  for (auto& [id, r] : s_.rows_) {
    if (!r.open() || r.next_attempt_at > now_) continue;
    if (start && position_of(r) < *start) continue;  // PostgreSQL's scan starts there
    const bool expired = r.state == "sending" && *r.lease_expires_at <= now_ && r.attempts < req.max_attempts;
    if (r.state != "pending" && !expired) continue;
    if (listed(req.skip_destinations, r.key())) continue;
    if (req.only_destination && r.key() != *req.only_destination) continue;
    due.push_back(&r);
  }
  std::sort(due.begin(), due.end(),
            [](const memory_row* a, const memory_row* b) { return position_of(*a) < position_of(*b); });
  if (due.size() > static_cast<std::size_t>(std::max(req.limit, 0))) due.resize(static_cast<std::size_t>(req.limit));
  db::claim_batch out;
  if (!due.empty()) out.first_picked = db::claim_position{position_of(*due.front()).first, due.front()->id};
  std::set<std::int64_t> picked;
  for (memory_row* r : due) {
    const bool reclaimed = r->state == "sending";
    r->state = "sending";
    r->lease_owner = req.owner;
    r->lease_token = req.token;
    r->lease_expires_at = now_ + req.lease;
    ++r->attempts;
    picked.insert(r->id);
    out.rows.push_back({r->id, r->lead_project_id, r->provider, r->destination, r->event_name, r->idempotency_key,
                        r->payload, r->attempts, r->created_at, req.token, reclaimed});
  }
  if (!req.only_destination && static_cast<int>(out.rows.size()) < req.limit) {
    out.next_due = next_due(req.skip_destinations, picked);
  }
  return out;
}

std::optional<milliseconds> memory_statements::next_due(std::span<const std::string> skip,
                                                        const std::set<std::int64_t>& picked) {
  std::optional<engine_clock::system_time> soonest;
  const auto consider = [&](engine_clock::system_time t) {
    if (!soonest || t < *soonest) soonest = t;
  };
  for (const auto& [id, r] : s_.rows_) {
    if (!r.open() || picked.contains(id) || listed(skip, r.key())) continue;
    if (r.state == "pending") consider(r.next_attempt_at);
    if (r.state == "sending" && r.next_attempt_at <= now_) consider(*r.lease_expires_at);
  }
  if (!soonest) return std::nullopt;
  return rounded_ms(*soonest - now_);
}

void memory_statements::log(const memory_row& r, const db::settlement& s, std::string outcome,
                            const std::string& owner) {
  s_.attempts_.push_back(
      {r.id, s.attempt, std::move(outcome), s.http_status, s.error, owner, s.note, s.provider_request_id});
}

void memory_statements::apply(memory_row& r, const db::settlement& s) {
  r.state = std::string(db::to_string(s.state));
  if (s.refund_attempt) --r.attempts;
  if (s.state == db::settle_state::pending) r.next_attempt_at = now_ + s.retry_delay;
  if (s.state == db::settle_state::sent) r.sent_at = now_;
  r.last_error = s.error;
  r.last_http_status = s.http_status;
  r.provider_response = s.response_excerpt;
  r.lease_owner.reset();
  r.lease_expires_at.reset();  // the token stays: a resent settle recognises its own outcome
  r.updated_at = now_;
}

db::settle_report memory_statements::settle(const std::string& owner, std::span<const db::settlement> batch) {
  db::settle_report report;
  for (const auto& s : batch) {
    auto it = s_.rows_.find(s.id);
    memory_row* r = it == s_.rows_.end() ? nullptr : &it->second;
    const bool ours = r && r->lease_token == s.lease_token;
    if (ours && r->state != "sending") {
      report.already_applied.push_back(s.id);  // an earlier send of this settle committed
      continue;
    }
    if (s.log_attempt && s.unanswered_first_try && r) {
      s_.attempts_.push_back({r->id, s.attempt, "no_answer_resent", std::nullopt, "no answer", owner, "", ""});
    }
    if (ours) {
      apply(*r, s);
      report.applied.push_back(s.id);
      if (!s.provider_request_id.empty()) {
        auto& requests = s_.requests_;
        const auto known = std::find_if(requests.begin(), requests.end(), [&](const auto& p) {
          return p.provider == r->provider && p.destination == r->destination && p.request_id == s.provider_request_id;
        });
        if (known == requests.end()) {
          requests.push_back(
              {r->provider, r->destination, s.provider_request_id, "", 1, 0, now_, now_ + s.status_check_after});
        }
      }
    }
    if (s.log_attempt && r) log(*r, s, ours ? s.outcome : "lease_lost", owner);
  }
  return report;
}

std::int64_t memory_statements::renew(std::span<const std::int64_t> ids, std::span<const std::string> tokens,
                                      std::chrono::seconds lease) {
  std::int64_t renewed = 0;
  for (std::size_t i = 0; i < ids.size() && i < tokens.size(); ++i) {
    auto it = s_.rows_.find(ids[i]);
    if (it == s_.rows_.end() || it->second.state != "sending" || it->second.lease_token != tokens[i]) continue;
    it->second.lease_expires_at = now_ + lease;
    ++renewed;
  }
  return renewed;
}

std::vector<std::int64_t> memory_statements::release_orphans(const std::string& owner,
                                                             std::span<const std::string> held) {
  std::vector<std::int64_t> released;
  for (auto& [id, r] : s_.rows_) {
    if (r.state != "sending" || r.next_attempt_at > now_ || r.lease_owner != owner) continue;
    if (listed(held, *r.lease_token)) continue;
    r.state = "pending";
    r.attempts = std::max(r.attempts - 1, 0);
    r.next_attempt_at = now_;
    r.lease_owner.reset();
    r.lease_token.reset();
    r.lease_expires_at.reset();
    r.updated_at = now_;
    released.push_back(id);
  }
  return released;
}

void memory_statements::record_policies(const std::string& /*owner*/,
                                        std::span<const db::destination_policy> policies) {
  for (const auto& p : policies) s_.policies_[p.provider + "/" + p.destination] = p;
}

}  // namespace outbox::test

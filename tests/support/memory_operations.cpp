// The in-memory store's sweep and its on-call, fleet, wake and request-status
// statements (memory_statements.hpp).
#include <algorithm>

#include "tests/support/memory_statements.hpp"

namespace outbox::test {
namespace {

std::string sweep_error(const std::string& state, const std::string& owner, int attempts) {
  if (state == "dead") {
    return "lease of " + owner + " expired on attempt " + std::to_string(attempts) + " and no attempts are left";
  }
  if (state == "held") return "lease of " + owner + " expired while a request may have been in flight; held for review";
  return "lease of " + owner + " expired; reset by the sweeper";
}

}  // namespace

std::vector<db::swept_row> memory_statements::sweep(const db::sweep_request& req) {
  std::vector<memory_row*> expired;
  for (auto& [id, r] : s_.rows_) {
    if (r.state != "sending" || r.next_attempt_at > now_ || *r.lease_expires_at > now_ - req.older_than) continue;
    if (req.provider && r.provider != *req.provider) continue;
    expired.push_back(&r);
  }
  std::stable_sort(expired.begin(), expired.end(), [](const memory_row* a, const memory_row* b) {
    return *a->lease_expires_at < *b->lease_expires_at;
  });
  std::vector<db::swept_row> out;
  for (memory_row* r : expired) {
    const auto policy = s_.policies_.find(r->key());
    const bool known = policy != s_.policies_.end();
    const int max_attempts = known ? policy->second.max_attempts : req.max_attempts;
    const bool hold = known ? policy->second.hold_reclaimed
                            : std::find(req.hold_destinations.begin(), req.hold_destinations.end(), r->key()) !=
                                  req.hold_destinations.end();
    const std::string state = r->attempts >= max_attempts ? "dead" : hold ? "held" : "pending";
    const double ago = std::chrono::duration<double>(now_ - *r->lease_expires_at).count();
    out.push_back({r->id, r->provider, r->destination, *r->lease_owner, r->attempts, state, ago, known});
    if (req.dry_run) continue;
    r->state = state;
    r->next_attempt_at = now_;
    r->last_error = sweep_error(state, *r->lease_owner, r->attempts);
    s_.attempts_.push_back(
        {r->id, r->attempts, "lease_expired", std::nullopt, "lease expired; row reset to " + state, *r->lease_owner});
    r->lease_owner.reset();
    r->lease_token.reset();
    r->lease_expires_at.reset();
    r->updated_at = now_;
  }
  if (!req.dry_run) {
    std::sort(out.begin(), out.end(), [](const db::swept_row& a, const db::swept_row& b) { return a.id < b.id; });
  }
  return out;
}

std::vector<db::destination_pause> memory_statements::list_pauses() {
  std::vector<db::destination_pause> out;
  for (const auto& [key, p] : s_.pauses_) out.push_back(p);
  return out;
}

// `since` is the sequence number of the newest request read, as text; the first call only learns it.
std::vector<db::resume_request> memory_statements::resume_requests(std::string& since) {
  std::vector<db::resume_request> out;
  const bool first = since.empty();
  const std::int64_t after = first ? 0 : std::stoll(since);
  if (!first) {
    for (const auto& [seq, r] : s_.resume_requests_) {
      if (seq > after) out.push_back(r);
    }
  }
  since = std::to_string(s_.resume_sequence_);
  return out;
}

db::queue_gauges memory_statements::queue_gauges(const std::vector<std::string>& paused) {
  db::queue_gauges g;
  for (const char* state : {"pending", "sending", "dead", "held"}) g.rows_by_state[state] = 0;
  std::optional<engine_clock::system_time> oldest;
  for (const auto& [id, r] : s_.rows_) {
    if (r.state != "sent") ++g.rows_by_state[r.state];
    if (r.state != "pending" || r.next_attempt_at > now_) continue;
    if (s_.pauses_.contains(r.key()) || std::find(paused.begin(), paused.end(), r.key()) != paused.end()) continue;
    if (!oldest || r.next_attempt_at < *oldest) oldest = r.next_attempt_at;
  }
  if (oldest) g.oldest_due_seconds = std::chrono::duration<double>(now_ - *oldest).count();
  return g;
}

std::vector<db::destination_lag> memory_statements::delivery_lag() {
  std::map<std::string, db::destination_lag> by_key;
  for (const auto& [id, r] : s_.rows_) {
    if (!r.open()) continue;
    auto& lag = by_key[r.key()];
    lag.provider = r.provider;
    lag.destination = r.destination;
    lag.seconds = std::max(lag.seconds, std::chrono::duration<double>(now_ - r.created_at).count());
    ++lag.rows;
  }
  std::vector<db::destination_lag> out;
  for (auto& [key, lag] : by_key) out.push_back(std::move(lag));
  return out;
}

void memory_statements::beat(const db::heartbeat& beat) { s_.heartbeats_[beat.instance] = beat; }

void memory_statements::goodbye(const std::string& instance) { s_.heartbeats_.erase(instance); }

nlohmann::json memory_statements::fleet() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [instance, b] : s_.heartbeats_) {
    out.push_back({{"instance", instance},
                   {"host", b.host},
                   {"last_seen", ""},
                   {"live", true},
                   {"automatic_pauses", b.automatic_pauses}});
  }
  return out;
}

void memory_statements::publish_awake(const std::string& instance, std::chrono::milliseconds ttl) {
  s_.awake_[instance] = now_ + ttl;
}

void memory_statements::publish_asleep(const std::string& instance) { s_.awake_.erase(instance); }

std::vector<db::due_request> memory_statements::take_due_requests(std::size_t limit, std::chrono::seconds hold_for) {
  std::vector<db::due_request> out;
  for (auto& p : s_.requests_) {
    if (out.size() >= limit) break;
    if (!p.status.empty() && p.status != "PROCESSING") continue;
    if (p.next_check_at > now_) continue;
    p.next_check_at = now_ + hold_for;
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(now_ - p.accepted_at).count();
    out.push_back({p.provider, p.destination, p.request_id, p.checks, age});
  }
  return out;
}

std::int64_t memory_statements::record_request_check(const db::request_check& check) {
  for (auto& p : s_.requests_) {
    if (p.provider != check.provider || p.destination != check.destination || p.request_id != check.request_id) {
      continue;
    }
    if (!check.status.empty()) p.status = check.status;
    if (check.read) ++p.checks;
    p.next_check_at = now_ + check.next_check;
    return p.rows;
  }
  return 0;
}

}  // namespace outbox::test

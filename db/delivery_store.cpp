#include "db/delivery_store.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;
constexpr auto statement_timeout = 30s;

// Expired leases first (recovery never waits for the sweeper), then due pending
// rows in schedule order. Each branch reads its own partial index.
constexpr const char* claim_sql = R"sql(
WITH expired AS (
    SELECT id FROM event_delivery
    WHERE state = 'sending' AND lease_expires_at <= now() AND attempts < $5
    ORDER BY lease_expires_at
    LIMIT $4 FOR UPDATE SKIP LOCKED),
due AS (
    SELECT id FROM event_delivery
    WHERE state = 'pending' AND next_attempt_at <= now()
    ORDER BY next_attempt_at
    LIMIT $4 FOR UPDATE SKIP LOCKED),
picked AS (
    SELECT id, true AS reclaimed FROM expired
    UNION ALL
    SELECT id, false FROM due
    LIMIT $4)
UPDATE event_delivery d
SET state = 'sending', lease_owner = $1, lease_token = $2::uuid,
    lease_expires_at = now() + $3::int * interval '1 second',
    attempts = d.attempts + 1, updated_at = now()
FROM picked
WHERE d.id = picked.id
RETURNING d.id, d.lead_project_id, d.provider, d.destination, d.event_name, d.idempotency_key,
          d.payload::text, d.attempts, (extract(epoch FROM d.created_at) * 1000)::bigint, picked.reclaimed)sql";

// One statement settles a whole batch and writes its attempts log. The fence
// (token and state) makes a stale worker's update a no-op, logged as lease_lost.
// Settle and renew run as unnamed statements on purpose: a prepared statement
// switches to a generic plan after five runs, and the generic plan of these
// unnest() joins cannot see the batch size, costing PostgreSQL about twice the
// CPU per row (measured with bench/statement_stats.sh: 154 vs 69 us per row).
constexpr const char* settle_sql = R"sql(
WITH s AS (
    SELECT * FROM unnest($2::bigint[], $3::uuid[], $4::text[], $5::bigint[], $6::boolean[], $7::int[],
                         $8::bigint[], $9::int[], $10::text[], $11::int[], $12::text[], $13::text[])
        AS s(id, token, new_state, delay_ms, refund, attempt, started_ms, duration_ms, outcome,
             http_status, error, excerpt)),
upd AS (
    UPDATE event_delivery d SET
        state = s.new_state,
        attempts = d.attempts - CASE WHEN s.refund THEN 1 ELSE 0 END,
        next_attempt_at = CASE WHEN s.new_state = 'pending'
                               THEN now() + s.delay_ms * interval '1 millisecond'
                               ELSE d.next_attempt_at END,
        sent_at = CASE WHEN s.new_state = 'sent' THEN now() ELSE d.sent_at END,
        last_error = NULLIF(s.error, ''),
        last_http_status = s.http_status,
        provider_response = NULLIF(s.excerpt, ''),
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM s
    WHERE d.id = s.id AND d.lease_token = s.token AND d.state = 'sending'
    RETURNING d.id),
logged AS (
    INSERT INTO event_delivery_attempt
        (delivery_id, attempt, started_at, duration_ms, outcome, http_status, error, response_excerpt, lease_owner)
    SELECT s.id, s.attempt, to_timestamp(s.started_ms / 1000.0), s.duration_ms,
           CASE WHEN upd.id IS NULL THEN 'lease_lost' ELSE s.outcome END,
           s.http_status, NULLIF(s.error, ''), NULLIF(s.excerpt, ''), $1
    FROM s LEFT JOIN upd ON upd.id = s.id)
SELECT id FROM upd)sql";

// SKIP LOCKED: a row locked right now is being settled (or swept), so it needs
// no renewal, and renewal must never wait: waiting while holding the locks of
// other rows the settle wants next is a deadlock (seen under load, each one
// stalling delivery for deadlock_timeout).
constexpr const char* renew_sql = R"sql(
WITH locked AS (
    SELECT d.id FROM event_delivery d
    JOIN unnest($1::bigint[], $2::uuid[]) AS s(id, token) ON d.id = s.id AND d.lease_token = s.token
    WHERE d.state = 'sending'
    FOR UPDATE OF d SKIP LOCKED)
UPDATE event_delivery d SET lease_expires_at = now() + $3::int * interval '1 second'
FROM locked WHERE d.id = locked.id)sql";

constexpr const char* release_sql = R"sql(
UPDATE event_delivery d SET
    state = 'pending', attempts = greatest(d.attempts - 1, 0), next_attempt_at = now(),
    lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
FROM unnest($1::bigint[], $2::uuid[]) AS s(id, token)
WHERE d.id = s.id AND d.lease_token = s.token AND d.state = 'sending')sql";

constexpr const char* sweep_dry_run_sql = R"sql(
SELECT id, provider, destination, lease_owner, attempts,
       CASE WHEN attempts >= $3 THEN 'dead'
            WHEN provider || '/' || destination = ANY($4::text[]) THEN 'held' ELSE 'pending' END,
       extract(epoch FROM now() - lease_expires_at)::float8
FROM event_delivery
WHERE state = 'sending' AND lease_expires_at <= now() - $2::int * interval '1 second'
  AND ($1::text IS NULL OR provider = $1)
ORDER BY lease_expires_at)sql";

constexpr const char* sweep_sql = R"sql(
WITH expired AS (
    SELECT id, lease_owner, extract(epoch FROM now() - lease_expires_at)::float8 AS ago
    FROM event_delivery
    WHERE state = 'sending' AND lease_expires_at <= now() - $2::int * interval '1 second'
      AND ($1::text IS NULL OR provider = $1)
    ORDER BY lease_expires_at
    FOR UPDATE SKIP LOCKED),
upd AS (
    UPDATE event_delivery d SET
        state = CASE WHEN d.attempts >= $3 THEN 'dead'
                     WHEN d.provider || '/' || d.destination = ANY($4::text[]) THEN 'held' ELSE 'pending' END,
        next_attempt_at = now(),
        last_error = CASE WHEN d.attempts >= $3
            THEN format('lease of %s expired on attempt %s and no attempts are left', e.lease_owner, d.attempts)
            ELSE format('lease of %s expired; reset by the sweeper', e.lease_owner) END,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM expired e
    WHERE d.id = e.id
    RETURNING d.id, d.provider, d.destination, e.lease_owner, d.attempts, d.state, e.ago),
logged AS (
    INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, error, lease_owner)
    SELECT id, attempts, now(), 0, 'lease_expired', 'lease expired; row reset to ' || state, lease_owner FROM upd)
SELECT * FROM upd ORDER BY id)sql";

constexpr const char* next_due_sql = R"sql(
SELECT (extract(epoch FROM least(
            (SELECT min(next_attempt_at) FROM event_delivery WHERE state = 'pending'),
            (SELECT min(lease_expires_at) FROM event_delivery WHERE state = 'sending')) - now()) * 1000)::bigint)sql";

std::string_view state_text(settle_state s) {
  switch (s) {
    case settle_state::sent:
      return "sent";
    case settle_state::dead:
      return "dead";
    case settle_state::held:
      return "held";
    case settle_state::pending:
      break;
  }
  return "pending";
}

std::string bool_array(const std::vector<bool>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += values[i] ? 't' : 'f';
  }
  return out + "}";
}

std::vector<swept_row> swept_rows(const result& r) {
  std::vector<swept_row> rows;
  for (int i = 0; i < r.rows(); ++i) {
    rows.push_back({r.int64(i, 0), std::string(r.text(i, 1)), std::string(r.text(i, 2)), std::string(r.text(i, 3)),
                    static_cast<int>(r.int64(i, 4)), std::string(r.text(i, 5)), std::stod(std::string(r.text(i, 6)))});
  }
  return rows;
}

}  // namespace

asio::awaitable<std::vector<claimed_row>> async_claim(connection& conn, const claim_request& req) {
  params args{req.owner, req.token, std::to_string(req.lease.count()), std::to_string(req.limit),
              std::to_string(req.max_attempts)};
  const auto r = co_await conn.async_query_prepared("outbox_claim", claim_sql, std::move(args), statement_timeout);
  std::vector<claimed_row> rows;
  rows.reserve(static_cast<std::size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    claimed_row row;
    row.id = r.int64(i, 0);
    row.lead_project_id = r.int64(i, 1);
    row.provider = r.text(i, 2);
    row.destination = r.text(i, 3);
    row.event_name = r.text(i, 4);
    row.idempotency_key = r.text(i, 5);
    row.payload = r.text(i, 6);
    row.attempts = static_cast<int>(r.int64(i, 7));
    row.created_at = sys_clock::time_point(std::chrono::milliseconds(r.int64(i, 8)));
    row.lease_token = req.token;
    row.reclaimed = r.boolean(i, 9);
    rows.push_back(std::move(row));
  }
  co_return rows;
}

asio::awaitable<std::vector<std::int64_t>> async_settle(connection& conn, std::string owner,
                                                        std::span<const settlement> batch) {
  std::vector<std::int64_t> ids, delays, started, durations, attempts;
  std::vector<std::string> tokens, states, outcomes, errors, excerpts;
  std::vector<std::optional<std::string>> statuses;
  std::vector<bool> refunds;
  for (const auto& s : batch) {
    ids.push_back(s.id);
    tokens.push_back(s.lease_token);
    states.emplace_back(state_text(s.state));
    delays.push_back(s.retry_delay.count());
    refunds.push_back(s.refund_attempt);
    attempts.push_back(s.attempt);
    started.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(s.started_at.time_since_epoch()).count());
    durations.push_back(s.duration.count());
    outcomes.push_back(s.outcome);
    statuses.push_back(s.http_status ? std::optional(std::to_string(*s.http_status)) : std::nullopt);
    errors.push_back(s.error);
    excerpts.push_back(s.response_excerpt);
  }
  params args{std::move(owner),         int_array(ids),      text_array(tokens),    text_array(states),
              int_array(delays),        bool_array(refunds), int_array(attempts),   int_array(started),
              int_array(durations),     text_array(outcomes), text_array(statuses), text_array(errors),
              text_array(excerpts)};
  const auto r = co_await conn.async_query(settle_sql, std::move(args), statement_timeout);
  std::vector<std::int64_t> settled;
  settled.reserve(static_cast<std::size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) settled.push_back(r.int64(i, 0));
  co_return settled;
}

asio::awaitable<std::int64_t> async_renew(connection& conn, std::span<const std::int64_t> ids,
                                          std::span<const std::string> tokens, std::chrono::seconds lease) {
  params args{int_array(ids), text_array(tokens), std::to_string(lease.count())};
  const auto r = co_await conn.async_query(renew_sql, std::move(args), statement_timeout);
  co_return r.affected();
}

asio::awaitable<std::int64_t> async_release(connection& conn, std::span<const std::int64_t> ids,
                                            std::span<const std::string> tokens) {
  params args{int_array(ids), text_array(tokens)};
  const auto r = co_await conn.async_query(release_sql, std::move(args), statement_timeout);
  co_return r.affected();
}

asio::awaitable<std::vector<swept_row>> async_sweep(connection& conn, const sweep_request& req) {
  params args{req.provider, std::to_string(req.older_than.count()), std::to_string(req.max_attempts),
              text_array(req.hold_destinations)};
  const auto r =
      co_await conn.async_query(req.dry_run ? sweep_dry_run_sql : sweep_sql, std::move(args), statement_timeout);
  co_return swept_rows(r);
}

asio::awaitable<std::optional<std::chrono::milliseconds>> async_next_due(connection& conn) {
  const auto r = co_await conn.async_query_prepared("outbox_next_due", next_due_sql, {}, statement_timeout);
  const auto ms = r.opt_int64(0, 0);
  if (!ms) co_return std::nullopt;
  co_return std::chrono::milliseconds(std::max<std::int64_t>(*ms, 0));
}

}  // namespace outbox::db

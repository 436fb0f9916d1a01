#pragma once
// The engine's statements against event_delivery, by name, for
// db/delivery_store.cpp (and bench/ceiling.cpp, which runs them without a
// dispatcher); kept apart so the C++ around them stays short.

#include <algorithm>
#include <array>
#include <cstddef>

namespace outbox::db::sql {

// The sessions of the claim and settle connections (dispatcher/engine/db_link.cpp;
// bench/ceiling.cpp runs the same): cached generic plans all day, and none
// that reads the whole table or backlog. A generic plan is made once per
// session (again after each ANALYZE of the table). Made while the table held
// a few rows (a fresh install, the first minute after a TRUNCATE or a big
// prune), reading all of it looks cheaper than a lookup per row, and that
// plan stays while the table grows: the claim read every due row by bitmap
// and sorted them (121 ms per claim at a backlog of 8,000), the settle read
// the whole primary key (30 - 100 ms per settle at 50,000 rows: the
// 32-writer "slow mode" of docs/benchmarks.md). The recipe that makes both
// plans is in tests/db/plan_stability_pgtest.cpp. With sequential and bitmap
// scans off, the claim can only walk the schedule index in order, up to its
// limit. The settle also runs without nested loops: its primary key lookups
// are `d.id = ANY($2)`, bounded by the batch, and joined to the batch by hash
// (a nested loop over the two would compare every pair).
inline constexpr const char* claim_session_settings =
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', false), "
    "set_config('enable_seqscan', 'off', false), set_config('enable_bitmapscan', 'off', false)";
// A claim's commit does not wait for its WAL flush (OUTBOX_CLAIM_SYNCHRONOUS_COMMIT=off):
// the request leaves one flush sooner. A server crash may lose such a claim; its
// rows are then due again and resent under the same idempotency key. Whatever
// commits later with a flush (the settle of those rows, a lease renewal) makes
// the claim durable first, as WAL is flushed in order.
inline constexpr const char* claim_without_flush_wait = "SELECT set_config('synchronous_commit', 'off', false)";
inline constexpr const char* settle_session_settings =
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', false), "
    "set_config('enable_seqscan', 'off', false), set_config('enable_bitmapscan', 'off', false), "
    "set_config('enable_nestloop', 'off', false)";

// Due pending rows and rows whose lease expired (recovery never waits for the
// sweeper), in schedule order, from one partial index (sql/0007): rows in
// sending keep the next_attempt_at they were due at, so an expired lease is
// found among the oldest entries. $6 lists "provider/destination" keys to
// leave alone (paused, circuit open); $7, when set, restricts the claim to one
// destination (the probe after a pause). The UPDATE changes no indexed column
// (not even updated_at): on a page with room it is a HOT update.
// When the claim is not full, a last row with a NULL id carries what the next
// claim would wait for (ms until the earliest row left, NULL when none): the
// idle claimer needs no statement of its own to learn it. Its subqueries run
// only then (an InitPlan runs when first needed; the one-time filter comes
// first), and they skip the rows this statement claimed, which its snapshot
// still shows as they were. created_ms goes through date_part (float8), not
// extract (numeric since PostgreSQL 14): numeric arithmetic for each row
// bought nothing at millisecond precision. The UPDATE finds each picked row
// by the ctid its lock returned (a TID scan) rather than through the primary
// key again: two buffer reads and about 2 us per row fewer (bench ceiling,
// alternated). The lock holds that version in place until commit; if a
// concurrent update made the locked version invisible to this statement's
// snapshot, the TID scan finds nothing and the row simply waits for the next
// claim (locked, not updated, not returned: never claimed twice or lost; it
// still counts as picked, so such a claim may omit its next-due row and the
// claimer falls back to its poll interval once).
// Joins string literals at compile time into one null-terminated array.
template <std::size_t... N>
constexpr auto join_sql(const char (&... parts)[N]) {
  std::array<char, (N + ...) - sizeof...(N) + 1> out{};
  std::size_t at = 0;
  ((std::copy_n(parts, N - 1, out.begin() + at), at += N - 1), ...);
  return out;
}

// What both claims do with the rows they picked (a CTE `picked` of id, ctid
// and reclaimed): claim them under the lease and return them, each with the
// schedule position (next_attempt_at in microseconds, id) of the first of them,
// then one more row (id NULL) whose next_due_ms says when the next row is due.
inline constexpr char claim_picked_rows[] = R"sql(
claimed AS (
    UPDATE event_delivery d
    SET state = 'sending', lease_owner = $1, lease_token = $2::uuid,
        lease_expires_at = now() + $3::int * interval '1 second',
        attempts = d.attempts + 1
    FROM picked
    WHERE d.ctid = picked.ctid
    RETURNING d.id, d.lead_project_id, d.provider, d.destination, d.event_name, d.idempotency_key,
              d.payload::text AS payload, d.attempts,
              (date_part('epoch', d.created_at) * 1000)::bigint AS created_ms, picked.reclaimed,
              d.next_attempt_at AS due_at)
SELECT c.id, c.lead_project_id, c.provider, c.destination, c.event_name, c.idempotency_key, c.payload,
       c.attempts, c.created_ms, c.reclaimed, NULL::bigint AS next_due_ms, first.due_us AS first_due_us,
       first.id AS first_id
FROM claimed c, (SELECT CASE WHEN isfinite(due_at) THEN (extract(epoch FROM due_at) * 1000000)::bigint END AS due_us,
                        id FROM claimed ORDER BY due_at, id LIMIT 1) first
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
)sql";

// A claim that is not full read every due row: each was picked, skipped, or
// locked by another claim. So the next pending row is due later
// (`next_attempt_at > now()`: an index descent), where reading on from the
// first due row stepped over every skipped row again (3.1 of a 9.8 ms claim
// behind 4,449 rows of 110 skipped destinations).
// The skipped destinations ($6, "provider/name") are tested with a NOT IN of
// (provider, destination) pairs, a hashed subplan: one lookup a row, no string
// built per row. `NOT (provider || '/' || destination = ANY($6))` compared each
// row with every skipped key: a claim stepping over 1,209 rows of 110 skipped
// destinations took 2.1 ms, the hashed concatenation 0.7 ms; over 4,399 rows,
// the concatenation 1.95 ms, the pairs 1.36 ms.
//
// $8 and $9 (NULL: from the start) are where the scan starts in schedule order
// (next_attempt_at in microseconds since the epoch, id), the first row the last
// claim picked: every row before it was skipped, locked or in flight then
// (dispatcher/engine/claim_scan_mark.hpp). It steps back to a second before
// the claim, so that a row whose transaction began before the mark and
// committed after it is still read; a transaction open longer than that waits
// for the next claim from the start (at least one a second).
inline constexpr char claim_scan_from[] =
    "(next_attempt_at, id) >= (least(coalesce(timestamptz 'epoch' + $8::bigint * interval '1 microsecond', "
    "'-infinity'), now() - interval '1 second'), CASE WHEN timestamptz 'epoch' + $8::bigint * interval "
    "'1 microsecond' < now() - interval '1 second' THEN $9::bigint ELSE 0 END)";
inline constexpr auto claim_text = join_sql(R"sql(
WITH picked AS (
    SELECT id, ctid, state = 'sending' AS reclaimed FROM event_delivery
    WHERE final_state IS NULL AND next_attempt_at <= now()
      AND )sql",
                                            claim_scan_from, R"sql(
      AND (state = 'pending' OR (lease_expires_at <= now() AND attempts < $5))
      AND (provider, destination) NOT IN (SELECT split_part(k, '/', 1), split_part(k, '/', 2) FROM unnest($6::text[]) k)
      AND ($7::text IS NULL OR provider || '/' || destination = $7)
    ORDER BY next_attempt_at, id
    LIMIT $4 FOR UPDATE SKIP LOCKED),

)sql",
                                            claim_picked_rows, R"sql(       (extract(epoch FROM least(
            (SELECT min(next_attempt_at) FROM event_delivery
             WHERE final_state IS NULL AND state = 'pending' AND next_attempt_at > now()
               AND (provider, destination) NOT IN (SELECT split_part(k, '/', 1), split_part(k, '/', 2) FROM unnest($6::text[]) k)),
            (SELECT min(lease_expires_at) FROM event_delivery
             WHERE final_state IS NULL AND next_attempt_at <= now() AND state = 'sending'
               AND )sql",
                                            claim_scan_from, R"sql(
               AND id NOT IN (SELECT id FROM picked)
               AND (provider, destination) NOT IN (SELECT split_part(k, '/', 1), split_part(k, '/', 2) FROM unnest($6::text[]) k))) - now()) * 1000)::bigint, NULL, NULL
WHERE $7::text IS NULL AND (SELECT count(*) FROM picked) < $4)sql");
inline constexpr const char* claim = claim_text.data();

// The claim while some destinations are skipped (paused, circuit open) or one
// is probed ($7): the same rows, taken destination by destination through
// event_delivery_destination_work_idx (sql/0009_destination_work_index.sql),
// so a paused backlog costs nothing: `claim` above would read every paused
// row due before the first live one (outbox_bench paused-backlog: 7,615
// buffers and 43 ms per claim behind 200,000 paused rows, 77,120 and 1.1 s
// behind 2,000,000; this statement 93 and 97 buffers, 1.2 and 1.6 ms). `destinations` lists the
// destinations that have unfinished rows with a loose index scan (one index
// descent per destination, not per row): rows naming no configured destination
// are still claimed and killed by the sender. Each live destination gives its
// first $4 due rows, the earliest $4 of them are locked (checked again under
// the lock) and claimed as `claim` does. A row another dispatcher locked in the
// meantime is skipped and the claim is not full: the next one follows at once.
// Its scans say `coalesce(final_state, 'open') = 'open'`, the predicate of
// that index alone: with `final_state IS NULL` the generic plan (which cannot
// see how rare a destination is) took the work index, already in schedule
// order, and filtered its rows by destination, the very cost this avoids.
inline constexpr auto claim_by_destination_text = join_sql(R"sql(
WITH RECURSIVE destinations AS (
    (SELECT provider, destination FROM event_delivery WHERE coalesce(final_state, 'open') = 'open'
     ORDER BY provider, destination LIMIT 1)
    UNION ALL
    SELECT n.provider, n.destination FROM destinations l
    CROSS JOIN LATERAL (
        SELECT provider, destination FROM event_delivery
        WHERE coalesce(final_state, 'open') = 'open' AND (provider, destination) > (l.provider, l.destination)
        ORDER BY provider, destination LIMIT 1) n),
live AS (
    SELECT provider, destination FROM destinations
    WHERE (provider, destination) NOT IN (SELECT split_part(k, '/', 1), split_part(k, '/', 2) FROM unnest($6::text[]) k)
      AND ($7::text IS NULL OR provider || '/' || destination = $7)),
candidates AS (
    SELECT c.id, c.next_attempt_at FROM live
    CROSS JOIN LATERAL (
        SELECT id, next_attempt_at FROM event_delivery e
        WHERE e.provider = live.provider AND e.destination = live.destination
          AND coalesce(e.final_state, 'open') = 'open' AND e.next_attempt_at <= now()
          AND (e.state = 'pending' OR (e.lease_expires_at <= now() AND e.attempts < $5))
        ORDER BY e.next_attempt_at LIMIT $4) c
    ORDER BY c.next_attempt_at LIMIT $4),
picked AS (
    SELECT id, ctid, state = 'sending' AS reclaimed FROM event_delivery
    WHERE id = ANY(ARRAY(SELECT id FROM candidates))
      AND final_state IS NULL AND next_attempt_at <= now()
      AND (state = 'pending' OR (lease_expires_at <= now() AND attempts < $5))
    ORDER BY next_attempt_at
    LIMIT $4 FOR UPDATE SKIP LOCKED),

)sql",
                                                           claim_picked_rows, R"sql(       (extract(epoch FROM least(
            (SELECT min(f.at) FROM live CROSS JOIN LATERAL (
                 SELECT next_attempt_at AS at FROM event_delivery e
                 WHERE e.provider = live.provider AND e.destination = live.destination
                   AND coalesce(e.final_state, 'open') = 'open' AND e.state = 'pending'
                   AND e.id NOT IN (SELECT id FROM picked)
                 ORDER BY e.next_attempt_at LIMIT 1) f),
            (SELECT min(f.lease) FROM live CROSS JOIN LATERAL (
                 SELECT lease_expires_at AS lease FROM event_delivery e
                 WHERE e.provider = live.provider AND e.destination = live.destination
                   AND coalesce(e.final_state, 'open') = 'open' AND e.next_attempt_at <= now() AND e.state = 'sending'
                   AND e.id NOT IN (SELECT id FROM picked)) f)) - now()) * 1000)::bigint, NULL, NULL
WHERE $7::text IS NULL AND (SELECT count(*) FROM picked) < $4)sql");
inline constexpr const char* claim_by_destination = claim_by_destination_text.data();

// One statement settles a whole batch and writes its attempts log. The fence
// (token and state) makes a stale worker's update a no-op, logged as lease_lost.
// A settle keeps the token it recorded, so the same settle sent again after a
// lost connection finds its rows in `prior` and neither changes nor logs them.
// `prior` probes only the rows `upd` did not change (usually none): probing
// every row again cost 3 of the 20 buffer reads of a row's settle and about
// 3 us (bench/statement_stats.sh drain: 41.1 -> 37.6 us per row).
// A settle of fewer than 200 rows runs as a prepared statement (its planning
// cost more than its execution); larger ones, and renew, run unnamed, planned
// for their size: the generic plan of these unnest() joins cannot see the
// batch size (measured with bench/statement_stats.sh: 154 vs 69 us per row
// for large batches). started_at divides as float8, not numeric (exact to the
// microsecond, cheaper). Every read of event_delivery is bounded by the
// batch (`d.id = ANY(...)`), whatever the statistics were when its generic
// plan was made (settle_session_settings above).
inline constexpr std::size_t settle_prepared_below = 200;  // rows

inline constexpr const char* settle = R"sql(
WITH s AS (
    SELECT * FROM unnest($2::bigint[], $3::uuid[], $4::text[], $5::bigint[], $6::boolean[], $7::int[],
                         $8::bigint[], $9::int[], $10::text[], $11::int[], $12::text[], $13::text[], $14::boolean[], $15::text[],
                         $16::text[], $17::text[], $18::text[], $19::int[], $20::int[])
        AS s(id, token, new_state, delay_ms, refund, attempt, started_ms, duration_ms, outcome,
             http_status, error, excerpt, log_attempt, note, dropped, match_keys, request_id, check_after_s,
             first_try_ms)),
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
        lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
    FROM s
    WHERE d.id = ANY($2::bigint[]) AND d.id = s.id AND d.lease_token = s.token AND d.state = 'sending'
    RETURNING d.id, d.provider, d.destination),
missing AS (
    SELECT id, token FROM s WHERE id NOT IN (SELECT id FROM upd)),
prior AS (
    SELECT d.id FROM event_delivery d JOIN missing m ON d.id = m.id AND d.lease_token = m.token
    WHERE d.id = ANY(ARRAY(SELECT id FROM missing)) AND d.state <> 'sending'),
erased AS (
    SELECT d.id FROM event_delivery d
    WHERE d.id = ANY(ARRAY(SELECT id FROM missing)) AND d.personal_data_erased_at IS NOT NULL),
logged AS (
    INSERT INTO event_delivery_attempt
        (delivery_id, attempt, started_at, duration_ms, outcome, http_status, error, response_excerpt,
         lease_owner, note, dropped_fields, match_keys, provider_request_id)
    SELECT s.id, s.attempt, to_timestamp(s.started_ms / 1000.0::float8), s.first_try_ms, 'no_answer_resent', NULL,
           'no answer: the connection closed after the whole request was written; resent on a fresh '
           || 'connection (may have reached the server)', NULL, $1, NULL, NULL, NULL, NULL
    FROM s
    WHERE s.first_try_ms IS NOT NULL AND s.log_attempt AND s.id NOT IN (SELECT id FROM prior)
    UNION ALL
    SELECT s.id, s.attempt, to_timestamp(s.started_ms / 1000.0::float8), s.duration_ms,
           CASE WHEN s.id IN (SELECT id FROM upd) THEN s.outcome ELSE 'lease_lost' END,
           s.http_status, NULLIF(s.error, ''), NULLIF(s.excerpt, ''), $1, NULLIF(s.note, ''),
           string_to_array(NULLIF(s.dropped, ''), E'\n'), string_to_array(NULLIF(s.match_keys, ''), ','),
           NULLIF(s.request_id, '')
    FROM s
    WHERE s.log_attempt AND s.id NOT IN (SELECT id FROM prior) AND s.id NOT IN (SELECT id FROM erased)
    UNION ALL
    SELECT s.id, s.attempt, to_timestamp(s.started_ms / 1000.0::float8), s.duration_ms, 'lease_lost',
           s.http_status, '[erased]', NULL, $1, NULL, NULL, NULL, NULLIF(s.request_id, '')
    FROM s
    WHERE s.log_attempt AND s.id IN (SELECT id FROM erased)),
requests AS (
    INSERT INTO provider_request (provider, destination, request_id, row_count, next_check_at)
    SELECT upd.provider, upd.destination, s.request_id, count(*), now() + max(s.check_after_s) * interval '1 second'
    FROM s JOIN upd ON upd.id = s.id
    WHERE s.request_id <> ''
    GROUP BY upd.provider, upd.destination, s.request_id
    ON CONFLICT DO NOTHING)
SELECT id, true FROM upd
UNION ALL
SELECT id, false FROM prior)sql";

// SKIP LOCKED: a row locked right now is being settled (or swept), so it needs
// no renewal, and renewal must never wait: waiting while holding the locks of
// other rows the settle wants next is a deadlock (seen under load, each one
// stalling delivery for deadlock_timeout).
inline constexpr const char* renew = R"sql(
WITH locked AS (
    SELECT d.id FROM event_delivery d
    JOIN unnest($1::bigint[], $2::uuid[]) AS s(id, token) ON d.id = s.id AND d.lease_token = s.token
    WHERE d.state = 'sending'
    FOR UPDATE OF d SKIP LOCKED)
UPDATE event_delivery d SET lease_expires_at = now() + $3::int * interval '1 second'
FROM locked WHERE d.id = locked.id)sql";

// Rows of claims whose answer was lost with a connection sit in `sending` under
// our name with a token we never learnt: every token of ours not in $2 (the
// tokens of rows we hold) is such a claim. Back to pending at once, the attempt
// not counted, nothing logged (nothing was attempted).
inline constexpr const char* release_orphans = R"sql(
UPDATE event_delivery d SET
    state = 'pending', attempts = greatest(d.attempts - 1, 0), next_attempt_at = now(),
    lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
WHERE d.final_state IS NULL AND d.next_attempt_at <= now() AND d.state = 'sending'
  AND d.lease_owner = $1 AND d.lease_token <> ALL($2::uuid[])
RETURNING d.id)sql";

// Expired leases with the fate each destination's recorded policy gives them
// (sql/0004): dead when no attempts are left, held for destinations that do
// not rely on provider dedup, pending otherwise. $3 and $4 are the caller's own
// defaults for destinations no dispatcher has recorded.
inline constexpr const char* sweep_candidates = R"sql(
    SELECT d.id, d.provider, d.destination, d.lease_owner, d.attempts,
           CASE WHEN d.attempts >= coalesce(p.max_attempts, $3) THEN 'dead'
                WHEN coalesce(p.hold_reclaimed, d.provider || '/' || d.destination = ANY($4::text[])) THEN 'held'
                ELSE 'pending' END AS new_state,
           extract(epoch FROM now() - d.lease_expires_at)::float8 AS ago,
           p.provider IS NOT NULL AS known
    FROM event_delivery d
    LEFT JOIN outbox_destination_policy p ON p.provider = d.provider AND p.destination = d.destination
    WHERE d.final_state IS NULL AND d.next_attempt_at <= now() AND d.state = 'sending'
      AND d.lease_expires_at <= now() - $2::bigint * interval '1 second'
      AND ($1::text IS NULL OR d.provider = $1)
    ORDER BY d.lease_expires_at)sql";

inline constexpr const char* sweep_dry_run_tail = R"sql(
SELECT id, provider, destination, lease_owner, attempts, new_state, ago, known FROM expired)sql";

inline constexpr const char* sweep_tail = R"sql(
, upd AS (
    UPDATE event_delivery d SET
        state = e.new_state,
        next_attempt_at = now(),
        last_error = CASE WHEN e.new_state = 'dead'
            THEN format('lease of %s expired on attempt %s and no attempts are left', e.lease_owner, d.attempts)
            WHEN e.new_state = 'held'
            THEN format('lease of %s expired while a request may have been in flight; held for review', e.lease_owner)
            ELSE format('lease of %s expired; reset by the sweeper', e.lease_owner) END,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    FROM expired e
    WHERE d.id = e.id AND d.state = 'sending'
    RETURNING d.id, d.provider, d.destination, e.lease_owner, d.attempts, d.state, e.ago, e.known),
logged AS (
    INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, error, lease_owner)
    SELECT id, attempts, now(), 0, 'lease_expired', 'lease expired; row reset to ' || state, lease_owner FROM upd)
SELECT * FROM upd ORDER BY id)sql";

// $1: destinations the claim skips; their rows must not make the claimer spin.
inline constexpr const char* next_due = R"sql(
SELECT (extract(epoch FROM least(
            (SELECT min(next_attempt_at) FROM event_delivery
             WHERE final_state IS NULL AND state = 'pending'
               AND (provider, destination) NOT IN (SELECT split_part(k, '/', 1), split_part(k, '/', 2) FROM unnest($1::text[]) k)),
            (SELECT min(lease_expires_at) FROM event_delivery
             WHERE final_state IS NULL AND next_attempt_at <= now() AND state = 'sending'
               AND (provider, destination) NOT IN (SELECT split_part(k, '/', 1), split_part(k, '/', 2) FROM unnest($1::text[]) k))) - now()) * 1000)::bigint)sql";

// Each dispatcher records the policy of its configured destinations at start-up.
inline constexpr const char* record_policies = R"sql(
INSERT INTO outbox_destination_policy (provider, destination, hold_reclaimed, max_attempts, recorded_by)
SELECT p.provider, p.destination, p.hold, p.max_attempts, $5
FROM unnest($1::text[], $2::text[], $3::boolean[], $4::int[]) AS p(provider, destination, hold, max_attempts)
ON CONFLICT (provider, destination) DO UPDATE SET
    hold_reclaimed = excluded.hold_reclaimed, max_attempts = excluded.max_attempts,
    recorded_at = now(), recorded_by = excluded.recorded_by)sql";

}  // namespace outbox::db::sql

#include "db/operations_store.hpp"
#include "db/transaction_sql.hpp"

#include <stdexcept>

namespace outbox::db {
namespace {

using namespace std::chrono_literals;
constexpr auto operations_timeout = 60s;

// Counts use the partial indexes. `sent` is counted only while the planner's
// estimate of the whole table is small (reltuples: -1 before the first ANALYZE);
// above that it is the estimate minus the open rows, and says so
// (sent_estimated), because counting millions of delivered rows helps nobody
// at 3 a.m. Every state is listed, 0 included.
constexpr const char* status_sql = R"sql(
WITH open_rows AS (
    SELECT state, count(*) AS n FROM event_delivery WHERE (final_state IS NULL OR final_state IN ('dead', 'held'))
    GROUP BY state),
table_estimate AS (
    SELECT reltuples::bigint >= 100000 AS large, reltuples::bigint AS n
    FROM pg_class WHERE oid = 'event_delivery'::regclass),
sent AS (
    SELECT e.large AS estimated,
           CASE WHEN e.large THEN greatest(e.n - (SELECT coalesce(sum(n), 0) FROM open_rows), 0)::bigint
                ELSE (SELECT count(*) FROM event_delivery WHERE final_state = 'sent') END AS n
    FROM table_estimate e)
SELECT json_build_object(
  'by_state', (SELECT json_object_agg(s.state, CASE WHEN s.state = 'sent' THEN (SELECT n FROM sent)
                                                    ELSE coalesce(o.n, 0) END ORDER BY s.ord)
               FROM unnest(ARRAY['pending', 'sending', 'dead', 'held', 'sent']) WITH ORDINALITY AS s(state, ord)
               LEFT JOIN open_rows o ON o.state = s.state),
  'sent_estimated', (SELECT estimated FROM sent),
  'sent_estimate', (SELECT n FROM sent),
  'by_destination', (SELECT coalesce(json_agg(d ORDER BY d.provider, d.destination), '[]') FROM (
      SELECT provider, destination,
             count(*) FILTER (WHERE state = 'pending') AS pending,
             count(*) FILTER (WHERE state = 'pending' AND next_attempt_at <= now()) AS due,
             count(*) FILTER (WHERE state = 'sending') AS sending,
             count(*) FILTER (WHERE state = 'dead') AS dead,
             count(*) FILTER (WHERE state = 'held') AS held
      FROM event_delivery WHERE (final_state IS NULL OR final_state IN ('dead', 'held'))
      GROUP BY provider, destination) d),
  'oldest_due', (SELECT json_build_object('id', id, 'provider', provider, 'destination', destination,
                                          'age_seconds', round(extract(epoch FROM now() - next_attempt_at)::numeric, 1))
                 FROM event_delivery WHERE final_state IS NULL AND state = 'pending' AND next_attempt_at <= now()
                 ORDER BY next_attempt_at LIMIT 1),
  'expired_leases', (SELECT count(*) FROM event_delivery WHERE final_state IS NULL AND next_attempt_at <= now() AND state = 'sending' AND lease_expires_at <= now()),
  'dead_last_24h', (SELECT count(*) FROM event_delivery WHERE final_state = 'dead' AND updated_at > now() - interval '24 hours'),
  'paused_destinations', (SELECT coalesce(json_agg(p ORDER BY p.provider, p.destination), '[]') FROM (
      SELECT provider, destination, reason, paused_at, paused_by FROM outbox_destination_pause) p)
)::text)sql";

// One pass over the open rows: counts and the oldest due time per (state,
// provider, destination), then the due time's filters (skipped and paused
// destinations) on those few groups, not on each row (20,000 pending rows: 6 ms,
// against 10 - 13 ms for a scan that probed the pause table once per row).
constexpr const char* gauges_sql = R"sql(
WITH open_rows AS (
    SELECT state, provider, destination, count(*) AS n,
           min(next_attempt_at) FILTER (WHERE state = 'pending' AND next_attempt_at <= now()) AS oldest_due
    FROM event_delivery WHERE final_state IS NULL GROUP BY state, provider, destination),
finished AS (
    SELECT state, count(*) AS n FROM event_delivery WHERE final_state IN ('dead', 'held') GROUP BY state),
oldest AS (
    SELECT min(o.oldest_due) AS at FROM open_rows o
    WHERE NOT (o.provider || '/' || o.destination = ANY($1::text[]))
      AND NOT EXISTS (SELECT 1 FROM outbox_destination_pause p
                      WHERE p.provider = o.provider AND p.destination = o.destination))
SELECT s.state,
       (coalesce((SELECT sum(o.n) FROM open_rows o WHERE o.state = s.state), 0)
        + coalesce((SELECT sum(f.n) FROM finished f WHERE f.state = s.state), 0))::bigint,
       coalesce((SELECT extract(epoch FROM now() - oldest.at)::float8 FROM oldest), 0)
FROM unnest(ARRAY['pending', 'sending', 'dead', 'held']) AS s(state))sql";

// The rows a row_filter names: $1..$9 (row_filter_params); the commands' own
// parameters (operator, reason) follow from $10.
constexpr const char* row_filter_sql = R"sql(
    state = ANY($1::text[])
    AND (cardinality($2::bigint[]) = 0 OR id = ANY($2::bigint[]))
    AND ($3::text IS NULL OR provider = $3)
    AND ($4::text IS NULL OR destination = $4)
    AND ($5::text IS NULL OR strpos(coalesce(last_error, ''), $5) > 0)
    AND ($6::timestamptz IS NULL OR updated_at >= $6)
    AND ($7::timestamptz IS NULL OR updated_at < $7)
    AND ($8::bigint IS NULL OR lead_project_id = $8)
    ORDER BY id LIMIT $9::bigint)sql";

// Rows whose personal data was erased (sql/0013) can be neither requeued nor
// marked sent: what would be sent is no longer there.
constexpr const char* still_whole = " personal_data_erased_at IS NULL AND ";

// Appended, not `std::string(...) + ... + ...`: GCC 12 at -O3 prints a false -Warray-bounds on that.
std::string dry_run_sql(bool erased_too) {
  return std::string(
             "SELECT id, provider, destination, event_name, state, coalesce(last_error, '') "
             "FROM event_delivery WHERE")
      .append(erased_too ? "" : still_whole)
      .append(row_filter_sql);
}

std::string count_erased_sql() {
  return std::string(
             "SELECT count(*) FROM (SELECT id FROM event_delivery WHERE personal_data_erased_at IS NOT NULL AND")
      .append(row_filter_sql)
      .append(") erased");
}

// Never touches idempotency_key or payload: a requeued row is the same event.
// Rows a claim or another command holds are skipped, not waited for.
// Appended, not `std::string(...) + ... + ...`: GCC 12 at -O3 prints a false -Warray-bounds on that.
std::string requeue_sql() {
  return std::string(R"sql(
WITH picked AS (
    SELECT id, state, coalesce(last_error, '') AS last_error FROM event_delivery WHERE)sql")
      .append(still_whole)
      .append(row_filter_sql)
      .append(R"sql(
    FOR UPDATE SKIP LOCKED),
upd AS (
    UPDATE event_delivery d SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now()
    FROM picked WHERE d.id = picked.id
    RETURNING d.id, d.provider, d.destination, d.event_name, picked.state, picked.last_error),
logged AS (
    INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, error, lease_owner)
    SELECT id, 0, now(), 0, 'requeued', 'requeued from ' || state || ' by ' || $10, $10 FROM upd),
wake AS (SELECT pg_notify('outbox_event_delivery', '') WHERE EXISTS (SELECT 1 FROM upd))
SELECT upd.* FROM upd LEFT JOIN wake ON true ORDER BY id)sql");
}

// What each manual settlement sets, and how the attempts log names it.
struct settlement_sql {
  const char* set;
  const char* outcome;
  const char* verb;
};
constexpr settlement_sql discard_sql{"state = 'dead', last_error = 'discarded by ' || $10 || ': ' || $11", "discarded",
                                     "discarded"};
constexpr settlement_sql mark_sent_sql{"state = 'sent', sent_at = now(), last_error = NULL", "marked_sent",
                                       "marked sent"};

// A decision about these very rows: waits for a row a claim holds for a moment
// (then re-checks its state), rather than skipping it silently.
// The SQL keeps its own layout: a reflow of the concatenation would hide it.
// clang-format off
std::string settle_by_hand_sql(const settlement_sql& how, bool erased_too) {
  return std::string(R"sql(
WITH picked AS (
    SELECT id, state, coalesce(last_error, '') AS last_error FROM event_delivery WHERE)sql")
      .append(erased_too ? "" : still_whole)
      .append(row_filter_sql)
      .append(R"sql(
    FOR UPDATE),
upd AS (
    UPDATE event_delivery d SET )sql")
      .append(how.set)
      .append(R"sql(, updated_at = now()
    FROM picked WHERE d.id = picked.id
    RETURNING d.id, d.provider, d.destination, d.event_name, picked.state, picked.last_error),
logged AS (
    INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, error, lease_owner)
    SELECT id, 0, now(), 0, ')sql")
      .append(how.outcome)
      .append("', '")
      .append(how.verb)
      .append(R"sql( from ' || state || ' by ' || $10 || ': ' || $11, $10 FROM upd)
SELECT * FROM upd ORDER BY id)sql");
}
// clang-format on

constexpr const char* time_ago_sql = "SELECT (now() - $1::bigint * interval '1 second')::text";
constexpr const char* read_time_sql = "SELECT $1::timestamptz::text";

constexpr const char* find_rows_sql = R"sql(
SELECT id FROM event_delivery
WHERE ($1::bigint IS NULL OR lead_project_id = $1) AND ($2::text IS NULL OR idempotency_key = $2)
ORDER BY id)sql";

constexpr const char* database_label_sql = R"sql(
SELECT '"' || current_database() || '" on ' ||
       coalesce(host(inet_server_addr()) || ':' || inet_server_port(), 'local socket'))sql";

// An attempt's provider_request_id is the provider's id for the request that
// carried it; its processing result is the provider_request row of that id
// for the row's provider and destination (null until one is recorded).
constexpr const char* inspect_sql = R"sql(
SELECT json_build_object(
  'row', (SELECT to_jsonb(d) - 'lease_token' || jsonb_build_object('payload_text', d.payload::text)
          FROM event_delivery d WHERE id = $1),
  'attempts', (SELECT coalesce(json_agg(a ORDER BY a.id), '[]') FROM (
      SELECT a.id, a.attempt, a.started_at, a.duration_ms, a.outcome, a.http_status, a.error, a.response_excerpt,
             a.lease_owner, a.note, a.dropped_fields, a.match_keys, a.provider_request_id,
             (SELECT json_build_object('status', r.status, 'detail', r.detail, 'row_count', r.row_count,
                                       'accepted_at', r.accepted_at, 'checks', r.checks, 'checked_at', r.checked_at,
                                       'next_check_at', r.next_check_at)
              FROM provider_request r
              WHERE r.provider = d.provider AND r.destination = d.destination
                AND r.request_id = a.provider_request_id) AS provider_request
      FROM event_delivery_attempt a JOIN event_delivery d ON d.id = a.delivery_id
      WHERE a.delivery_id = $1) a))::text)sql";

// Sent rows by sent_at, dead rows by updated_at: each through its partial index.
struct prune_sql {
  std::string count;
  std::string batch;
};

// The archive has the columns of sql/0001 (plus archived_at), named one by one:
// later columns of event_delivery (final_state, generated) are not archived.
constexpr const char* archived_columns =
    "id, lead_project_id, provider, destination, event_name, idempotency_key, payload, state, attempts, "
    "next_attempt_at, lease_owner, lease_token, lease_expires_at, sent_at, last_error, last_http_status, "
    "provider_response, created_at, updated_at";

// `state` and `since` are constants of this file, never input.
// The SQL keeps its own layout: a reflow of the concatenation would hide it.
// clang-format off
prune_sql make_prune_sql(const std::string& state, const std::string& since) {
  const std::string old_rows = "final_state = '" + state + "' AND " + since +
                               " < now() - $1::bigint * interval '1 second'";
  const std::string columns = archived_columns;
  return {"SELECT count(*) FROM event_delivery WHERE " + old_rows,
          "WITH victims AS (\n"
          "    SELECT id FROM event_delivery WHERE " + old_rows + "\n"
          "    ORDER BY " + since + " LIMIT $2 FOR UPDATE SKIP LOCKED),\n"
          "gone AS (DELETE FROM event_delivery d USING victims v WHERE d.id = v.id RETURNING d.*),\n"
          "archived AS (INSERT INTO event_delivery_archive (" + columns + ")\n"
          "             SELECT " + columns + " FROM gone WHERE $3::boolean),\n"
          "attempts AS (DELETE FROM event_delivery_attempt a USING gone WHERE a.delivery_id = gone.id)\n"
          "SELECT count(*) FROM gone"};
}
// clang-format on

const prune_sql& prune_sent_sql() {
  static const prune_sql sql = make_prune_sql("sent", "sent_at");
  return sql;
}
const prune_sql& prune_dead_sql() {
  static const prune_sql sql = make_prune_sql("dead", "updated_at");
  return sql;
}

constexpr const char* archive_count_sql = R"sql(
SELECT count(*) FROM event_delivery_archive WHERE archived_at < now() - $1::bigint * interval '1 second')sql";
constexpr const char* archive_prune_sql = R"sql(
DELETE FROM event_delivery_archive WHERE archived_at < now() - $1::bigint * interval '1 second')sql";
constexpr auto archive_timeout = 10min;  // one statement over an unindexed table

// Processing results of requests accepted before the period (one row per request,
// not per event); requests still waiting for a final status stay.
constexpr const char* prune_requests_sql = R"sql(
DELETE FROM provider_request
WHERE accepted_at < now() - $1::bigint * interval '1 second' AND status NOT IN ('PENDING', 'PROCESSING'))sql";

constexpr const char* list_pauses_sql = R"sql(
SELECT provider, destination, reason, paused_at::text, coalesce(paused_by, '')
FROM outbox_destination_pause ORDER BY provider, destination)sql";

constexpr const char* pause_sql = R"sql(
INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) VALUES ($1, $2, $3, $4)
ON CONFLICT (provider, destination) DO UPDATE SET reason = EXCLUDED.reason, paused_by = EXCLUDED.paused_by
RETURNING (xmax = 0))sql";

// Rows put back while paused wait for a while; resuming makes them due now.
constexpr const char* resume_sql = R"sql(
WITH gone AS (DELETE FROM outbox_destination_pause WHERE provider = $1 AND destination = $2 RETURNING 1),
due AS (
    UPDATE event_delivery SET next_attempt_at = now()
    WHERE final_state IS NULL AND state = 'pending' AND provider = $1 AND destination = $2
      AND next_attempt_at > now()
      AND EXISTS (SELECT 1 FROM gone)
    RETURNING 1),
wake AS (SELECT pg_notify('outbox_event_delivery', '') WHERE EXISTS (SELECT 1 FROM gone))
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM due), (SELECT count(*) FROM wake))sql";

params row_filter_params(const row_filter& f) {
  const param limit = f.limit ? param{std::to_string(*f.limit)} : std::nullopt;
  const param lead = f.lead ? param{std::to_string(*f.lead)} : std::nullopt;
  return {text_array(f.states),
          int_array(f.ids),
          f.provider,
          f.destination,
          f.error_contains,
          f.since,
          f.until,
          lead,
          limit};
}

std::vector<changed_row> read_changed_rows(const result& r) {
  std::vector<changed_row> rows;
  for (int i = 0; i < r.rows(); ++i) {
    rows.push_back({r.int64(i, 0), std::string(r.text(i, 1)), std::string(r.text(i, 2)), std::string(r.text(i, 3)),
                    std::string(r.text(i, 4)), std::string(r.text(i, 5))});
  }
  return rows;
}

// Programming errors: the command line offers only these states.
void check_settle_states(const row_filter& f) {
  for (const auto& s : f.states) {
    if (s != "pending" && s != "held" && s != "dead") {
      throw std::invalid_argument("a manual settlement takes pending, held or dead rows, not " + s);
    }
  }
}

}  // namespace

asio::awaitable<nlohmann::json> async_status(connection& conn) {
  const auto r = co_await conn.async_query(status_sql, {}, operations_timeout);
  co_return nlohmann::json::parse(r.text(0, 0));
}

asio::awaitable<queue_gauges> async_queue_gauges(connection& conn, const std::vector<std::string>& paused) {
  params args{text_array(paused)};
  const auto r = co_await conn.async_query_prepared("outbox_gauges", gauges_sql, std::move(args), operations_timeout);
  queue_gauges g;
  for (int i = 0; i < r.rows(); ++i) {
    g.rows_by_state[std::string(r.text(i, 0))] = r.int64(i, 1);
    g.oldest_due_seconds = std::stod(std::string(r.text(i, 2)));
  }
  co_return g;
}

asio::awaitable<std::vector<requeued_row>> async_requeue(connection& conn, const requeue_filter& f, std::string actor) {
  auto args = row_filter_params(f);
  if (!f.dry_run) args.push_back(std::move(actor));
  const auto sql = f.dry_run ? dry_run_sql(false) : requeue_sql();
  const auto r = co_await conn.async_query(sql, std::move(args), operations_timeout);
  co_return read_changed_rows(r);
}

asio::awaitable<std::vector<changed_row>> async_settle_by_hand(connection& conn, const row_filter& f,
                                                               manual_settlement how, std::string actor,
                                                               std::string reason) {
  check_settle_states(f);
  auto args = row_filter_params(f);
  if (!f.dry_run) {
    args.push_back(std::move(actor));
    args.push_back(std::move(reason));
  }
  const bool discard = how == manual_settlement::discard;  // giving up needs nothing of the payload
  const auto& what = discard ? discard_sql : mark_sent_sql;
  const auto sql = f.dry_run ? dry_run_sql(discard) : settle_by_hand_sql(what, discard);
  const auto r = co_await conn.async_query(sql, std::move(args), operations_timeout);
  co_return read_changed_rows(r);
}

asio::awaitable<std::int64_t> async_count_erased(connection& conn, const row_filter& f) {
  const auto r = co_await conn.async_query(count_erased_sql(), row_filter_params(f), operations_timeout);
  co_return r.int64(0, 0);
}

asio::awaitable<std::optional<std::string>> async_resolve_time(connection& conn, time_arg t) {
  if (t.ago) {
    params args{std::to_string(t.ago->count())};
    const auto r = co_await conn.async_query(time_ago_sql, std::move(args), operations_timeout);
    co_return std::string(r.text(0, 0));
  }
  try {
    params args{t.absolute};
    const auto r = co_await conn.async_query(read_time_sql, std::move(args), operations_timeout);
    co_return std::string(r.text(0, 0));
  } catch (const error& e) {
    // Class 22 (data exception): not a time PostgreSQL reads. Anything else is a real failure.
    if (e.kind() != error_kind::sql || !e.sqlstate().starts_with("22")) throw;
  }
  co_return std::nullopt;
}

asio::awaitable<nlohmann::json> async_inspect(connection& conn, std::int64_t id) {
  params args{std::to_string(id)};
  const auto r = co_await conn.async_query(inspect_sql, std::move(args), operations_timeout);
  auto doc = nlohmann::json::parse(r.text(0, 0));
  if (doc["row"].is_null()) co_return nullptr;
  co_return doc;
}

asio::awaitable<std::vector<std::int64_t>> async_find_rows(connection& conn, row_lookup what) {
  const param lead = what.lead ? param{std::to_string(*what.lead)} : std::nullopt;
  params args{lead, what.key};
  const auto r = co_await conn.async_query(find_rows_sql, std::move(args), operations_timeout);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < r.rows(); ++i) ids.push_back(r.int64(i, 0));
  co_return ids;
}

asio::awaitable<std::int64_t> async_prune(connection& conn, const prune_request& req) {
  const std::string age = std::to_string(req.older_than.count());
  const auto& sql = req.state == prune_state::sent ? prune_sent_sql() : prune_dead_sql();
  if (req.dry_run) {
    params args{age};
    const auto r = co_await conn.async_query(sql.count, std::move(args), operations_timeout);
    co_return r.int64(0, 0);
  }
  std::int64_t total = 0;
  for (;;) {
    // One short transaction per batch: locks are held for milliseconds, not minutes.
    params args{age, std::to_string(req.batch), req.archive ? "true" : "false"};
    const auto r = co_await conn.async_query(sql.batch, std::move(args), operations_timeout);
    const auto n = r.int64(0, 0);
    total += n;
    if (n < req.batch) break;
  }
  if (req.state == prune_state::sent) {
    params args{age};
    (void)co_await conn.async_query(prune_requests_sql, std::move(args), operations_timeout);
  }
  co_return total;
}

asio::awaitable<std::int64_t> async_prune_archive(connection& conn, std::chrono::seconds older_than, bool dry_run) {
  params args{std::to_string(older_than.count())};
  const auto r = co_await conn.async_query(dry_run ? archive_count_sql : archive_prune_sql, std::move(args),
                                           dry_run ? operations_timeout : archive_timeout);
  co_return dry_run ? r.int64(0, 0) : r.affected();
}

asio::awaitable<void> async_set_lock_timeout(connection& conn, std::chrono::milliseconds timeout) {
  params args{std::to_string(timeout.count()) + "ms"};
  (void)co_await conn.async_query(set_lock_timeout_sql, std::move(args), operations_timeout);
}

asio::awaitable<std::string> async_database_label(connection& conn) {
  const auto r = co_await conn.async_query(database_label_sql, {}, operations_timeout);
  co_return std::string(r.text(0, 0));
}

asio::awaitable<std::vector<destination_pause>> async_list_pauses(connection& conn) {
  const auto r = co_await conn.async_query(list_pauses_sql, {}, operations_timeout);
  std::vector<destination_pause> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({std::string(r.text(i, 0)), std::string(r.text(i, 1)), std::string(r.text(i, 2)),
                   std::string(r.text(i, 3)), std::string(r.text(i, 4))});
  }
  co_return out;
}

asio::awaitable<bool> async_pause(connection& conn, const std::string& provider, const std::string& destination,
                                  const std::string& reason, const std::string& actor) {
  params args{provider, destination, reason, actor};
  const auto r = co_await conn.async_query(pause_sql, std::move(args), operations_timeout);
  co_return r.boolean(0, 0);
}

asio::awaitable<bool> async_resume(connection& conn, const std::string& provider, const std::string& destination) {
  params args{provider, destination};
  const auto r = co_await conn.async_query(resume_sql, std::move(args), operations_timeout);
  co_return r.int64(0, 0) > 0;
}

}  // namespace outbox::db

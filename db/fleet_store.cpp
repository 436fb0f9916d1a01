#include "db/fleet_store.hpp"

#include "db/params.hpp"
#include "db/text_param.hpp"

namespace outbox::db {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::seconds fleet_timeout{30};

constexpr const char* beat_sql = R"sql(
INSERT INTO outbox_dispatcher_heartbeat
    (instance, version, host, pid, started_at, last_seen, sweep_interval_seconds, automatic_pauses)
VALUES ($1, $2, $3, $4::int, to_timestamp($5::bigint / 1000.0), now(), $6::int, $7::jsonb)
ON CONFLICT (instance) DO UPDATE SET
    version = EXCLUDED.version, host = EXCLUDED.host, pid = EXCLUDED.pid, started_at = EXCLUDED.started_at,
    last_seen = now(), sweep_interval_seconds = EXCLUDED.sweep_interval_seconds,
    automatic_pauses = EXCLUDED.automatic_pauses)sql";

constexpr const char* goodbye_sql = "DELETE FROM outbox_dispatcher_heartbeat WHERE instance = $1";

// The requests after $1, then one row with the new marker: the newest request
// seen, or now() on the first call (requests made before this dispatcher started
// were meant for the ones running then).
constexpr const char* resume_requests_sql = R"sql(
WITH r AS (
    SELECT provider, destination, requested_at FROM outbox_destination_resume
    WHERE requested_at > NULLIF($1::text, '')::timestamptz)
SELECT provider, destination, NULL FROM r
UNION ALL
SELECT NULL, NULL, coalesce((SELECT max(requested_at) FROM r), NULLIF($1::text, '')::timestamptz, now())::text)sql";

// Pending and sending rows only: the backlog is small while deliveries keep up,
// so this scans little; during an outage it is the backlog, every sweep.
constexpr const char* delivery_lag_sql = R"sql(
SELECT provider, destination, extract(epoch FROM now() - min(created_at))::float8, count(*)
FROM event_delivery WHERE final_state IS NULL
GROUP BY provider, destination)sql";

constexpr const char* known_destination_sql = R"sql(
SELECT EXISTS (SELECT 1 FROM outbox_destination_policy WHERE provider = $1 AND destination = $2)
    OR EXISTS (SELECT 1 FROM event_delivery WHERE provider = $1 AND destination = $2))sql";

constexpr const char* signal_pauses_sql = "SELECT pg_notify('outbox_event_delivery', $1)";

// Data-modifying CTEs run whether or not the final SELECT reads them.
constexpr const char* request_resume_sql = R"sql(
WITH req AS (
    INSERT INTO outbox_destination_resume (provider, destination, requested_at, requested_by)
    VALUES ($1, $2, clock_timestamp(), $3)
    ON CONFLICT (provider, destination) DO UPDATE
        SET requested_at = clock_timestamp(), requested_by = EXCLUDED.requested_by
    RETURNING 1),
due AS (
    UPDATE event_delivery SET next_attempt_at = now()
    WHERE final_state IS NULL AND state = 'pending' AND provider = $1 AND destination = $2
      AND next_attempt_at > now()
    RETURNING 1)
SELECT count(*) FROM outbox_dispatcher_heartbeat h, jsonb_array_elements(h.automatic_pauses) p
WHERE h.last_seen > now() - 3 * h.sweep_interval_seconds * interval '1 second'
  AND p->>'provider' = $1 AND p->>'destination' = $2)sql";

constexpr const char* fleet_sql = R"sql(
SELECT coalesce(json_agg(json_build_object(
    'instance', instance, 'version', version, 'host', host, 'pid', pid,
    'started_at', started_at, 'last_seen', last_seen,
    'live', last_seen > now() - 3 * sweep_interval_seconds * interval '1 second',
    'automatic_pauses', automatic_pauses) ORDER BY last_seen DESC), '[]')::text
FROM outbox_dispatcher_heartbeat)sql";

asio::awaitable<void> goodbye(connection& conn, std::string instance) {
  params args{std::move(instance)};
  (void)co_await conn.async_query(goodbye_sql, std::move(args), fleet_timeout);
}

asio::awaitable<void> beat(connection& conn, const heartbeat& b) {
  params args{b.instance,
              clean_text(b.version, 100),
              clean_text(b.host, 200),
              std::to_string(b.pid),
              std::to_string(epoch_ms(b.started_at)),
              std::to_string(b.sweep_interval.count()),
              clean_json(b.automatic_pauses, 1000).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  (void)co_await conn.async_query(beat_sql, std::move(args), fleet_timeout);
}

asio::awaitable<std::vector<resume_request>> resume_requests(connection& conn, std::string& since) {
  params args{since};
  const auto r = co_await conn.async_query(resume_requests_sql, std::move(args), fleet_timeout);
  std::vector<resume_request> out;
  for (int i = 0; i < r.rows(); ++i) {
    if (r.is_null(i, 0)) {
      since = std::string(r.text(i, 2));
    } else {
      out.push_back({std::string(r.text(i, 0)), std::string(r.text(i, 1))});
    }
  }
  co_return out;
}

asio::awaitable<std::vector<destination_lag>> delivery_lag(connection& conn) {
  const auto r = co_await conn.async_query(delivery_lag_sql, {}, fleet_timeout);
  std::vector<destination_lag> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back(
        {std::string(r.text(i, 0)), std::string(r.text(i, 1)), std::stod(std::string(r.text(i, 2))), r.int64(i, 3)});
  }
  co_return out;
}

}  // namespace

asio::awaitable<outcome<void>> async_goodbye(connection& conn, const std::string& instance) {
  co_return co_await async_try(goodbye(conn, instance));
}

asio::awaitable<outcome<void>> async_beat(connection& conn, const heartbeat& b) {
  co_return co_await async_try(beat(conn, b));
}

asio::awaitable<outcome<std::vector<resume_request>>> async_resume_requests(connection& conn, std::string& since) {
  co_return co_await async_try(resume_requests(conn, since));
}

asio::awaitable<outcome<std::vector<destination_lag>>> async_delivery_lag(connection& conn) {
  co_return co_await async_try(delivery_lag(conn));
}

asio::awaitable<bool> async_known_destination(connection& conn, const std::string& provider,
                                              const std::string& destination) {
  params args{provider, destination};
  const auto r = co_await conn.async_query(known_destination_sql, std::move(args), fleet_timeout);
  co_return r.text(0, 0) == "t";
}

asio::awaitable<void> async_signal_pauses(connection& conn) {
  params args{std::string{pauses_changed_payload}};
  (void)co_await conn.async_query(signal_pauses_sql, std::move(args), fleet_timeout);
}

asio::awaitable<std::int64_t> async_request_resume(connection& conn, const std::string& provider,
                                                   const std::string& destination, const std::string& by) {
  params args{provider, destination, by};
  const auto r = co_await conn.async_query(request_resume_sql, std::move(args), fleet_timeout);
  co_await async_signal_pauses(conn);
  co_return r.int64(0, 0);
}

asio::awaitable<nlohmann::json> async_fleet(connection& conn) {
  const auto r = co_await conn.async_query(fleet_sql, {}, fleet_timeout);
  co_return nlohmann::json::parse(std::string(r.text(0, 0)));
}

}  // namespace outbox::db

#include "db/conversion_report_store.hpp"

#include "db/params.hpp"

namespace outbox::db {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::seconds report_timeout{60};
constexpr int top_dropped = 5;  // field:reason pairs listed per destination

// The window's delivered attempts are found through the rows sent in it
// (event_delivery_sent_idx) and their attempts (event_delivery_attempt_delivery_idx),
// so the query never scans the whole attempts log. provider_request holds one
// row per accepted request (not per event), small enough to scan.
// A dropped field is stored as "field: reason (detail)" (providers::dropped_field::text).
constexpr const char* conversion_report_sql = R"sql(
WITH keys AS (
    SELECT k, i FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i)),
delivered AS (
    SELECT a.id, d.provider, d.destination, a.match_keys, a.dropped_fields
    FROM event_delivery d JOIN event_delivery_attempt a ON a.delivery_id = d.id
    WHERE d.final_state = 'sent' AND d.sent_at > now() - interval '24 hours'
      AND a.outcome = 'delivered' AND a.started_at > now() - interval '24 hours'),
totals AS (
    SELECT provider, destination, count(*) AS delivered FROM delivered GROUP BY 1, 2),
key_counts AS (
    SELECT provider, destination, key, count(DISTINCT id) AS n
    FROM delivered, unnest(match_keys) AS key GROUP BY 1, 2, 3),
dropped AS (
    SELECT provider, destination, field, reason, count(*) AS n,
           row_number() OVER (PARTITION BY provider, destination ORDER BY count(*) DESC, field, reason) AS rank
    FROM (SELECT provider, destination, split_part(f, ': ', 1) AS field,
                 split_part(split_part(f, ': ', 2), ' (', 1) AS reason
          FROM delivered, unnest(dropped_fields) AS f) x
    GROUP BY 1, 2, 3, 4),
requests AS (
    SELECT provider, destination, status, count(*) AS requests, sum(row_count) AS rows
    FROM provider_request WHERE accepted_at > now() - interval '7 days' GROUP BY 1, 2, 3),
problems AS (
    SELECT DISTINCT ON (provider, destination) provider, destination, request_id, status, detail, checked_at, row_count
    FROM provider_request
    WHERE accepted_at > now() - interval '7 days' AND status IN ('PARTIAL_SUCCESS', 'FAILURE', 'UNKNOWN')
    ORDER BY provider, destination, checked_at DESC NULLS LAST, accepted_at DESC),
dests AS (
    SELECT provider, destination FROM totals UNION SELECT provider, destination FROM requests)
SELECT coalesce(json_agg(json_build_object(
    'provider', x.provider, 'destination', x.destination,
    'delivered', coalesce((SELECT delivered FROM totals t
                           WHERE (t.provider, t.destination) = (x.provider, x.destination)), 0),
    'match_keys', (
        SELECT json_agg(json_build_object('key', k.k, 'attempts', coalesce(c.n, 0)) ORDER BY k.i, k.k)
        FROM (SELECT k, i FROM keys
              UNION ALL
              SELECT o.key, NULL FROM key_counts o
              WHERE (o.provider, o.destination) = (x.provider, x.destination) AND o.key NOT IN (SELECT k FROM keys)) k
        LEFT JOIN key_counts c ON (c.provider, c.destination, c.key) = (x.provider, x.destination, k.k)),
    'dropped_total', (SELECT coalesce(sum(n), 0) FROM dropped p
                      WHERE (p.provider, p.destination) = (x.provider, x.destination)),
    'dropped', (SELECT coalesce(json_agg(json_build_object('field', field, 'reason', reason, 'count', n)
                                         ORDER BY rank), '[]')
                FROM dropped p WHERE (p.provider, p.destination) = (x.provider, x.destination) AND rank <= $2),
    'provider_requests', CASE WHEN EXISTS (SELECT 1 FROM requests r
                                           WHERE (r.provider, r.destination) = (x.provider, x.destination)) THEN
        json_build_object(
          'by_status', (
              SELECT json_object_agg(s.status, json_build_object('requests', coalesce(r.requests, 0),
                                                                 'rows', coalesce(r.rows, 0)) ORDER BY s.i)
              FROM unnest(ARRAY['PENDING', 'PROCESSING', 'SUCCESS', 'PARTIAL_SUCCESS', 'FAILURE', 'UNKNOWN'])
                   WITH ORDINALITY AS s(status, i)
              LEFT JOIN requests r ON (r.provider, r.destination, r.status) = (x.provider, x.destination, s.status)),
          'last_problem', (
              SELECT json_build_object('request_id', request_id, 'status', status, 'detail', detail,
                                       'checked_at', checked_at, 'row_count', row_count)
              FROM problems q WHERE (q.provider, q.destination) = (x.provider, x.destination)))
        END)
    ORDER BY x.provider, x.destination), '[]')::text
FROM dests x)sql";

}  // namespace

asio::awaitable<nlohmann::json> async_conversion_report(connection& conn, std::span<const std::string> match_keys) {
  params args{text_array(match_keys), std::to_string(top_dropped)};
  const auto r = co_await conn.async_query(conversion_report_sql, std::move(args), report_timeout);
  co_return nlohmann::json::parse(r.text(0, 0));
}

}  // namespace outbox::db

#include "db/request_status_store.hpp"

#include "db/params.hpp"
#include "db/text_param.hpp"

namespace outbox::db {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::seconds status_timeout{30};
constexpr std::size_t max_detail_bytes = 2000;

constexpr const char* take_due_sql = R"sql(
WITH due AS (
    SELECT provider, destination, request_id FROM provider_request
    WHERE status IN ('PENDING', 'PROCESSING') AND next_check_at <= now()
    ORDER BY next_check_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED)
UPDATE provider_request r SET next_check_at = now() + $2::int * interval '1 second'
FROM due
WHERE r.provider = due.provider AND r.destination = due.destination AND r.request_id = due.request_id
RETURNING r.provider, r.destination, r.request_id, r.checks,
          extract(epoch FROM now() - r.accepted_at)::bigint)sql";

constexpr const char* record_check_sql = R"sql(
UPDATE provider_request SET
    status = COALESCE(NULLIF($4, ''), status),
    detail = COALESCE(NULLIF($5, ''), detail),
    checks = checks + $7::int,
    checked_at = CASE WHEN $7::int > 0 THEN now() ELSE checked_at END,
    next_check_at = now() + $6::int * interval '1 second'
WHERE provider = $1 AND destination = $2 AND request_id = $3
RETURNING row_count)sql";

asio::awaitable<std::vector<due_request>> take_due(connection& conn, std::size_t limit, std::chrono::seconds hold_for) {
  params args{std::to_string(limit), std::to_string(hold_for.count())};
  const auto r = co_await conn.async_query(take_due_sql, std::move(args), status_timeout);
  std::vector<due_request> due;
  for (int i = 0; i < r.rows(); ++i) {
    due.push_back({std::string{r.text(i, 0)}, std::string{r.text(i, 1)}, std::string{r.text(i, 2)},
                   static_cast<int>(r.int64(i, 3)), r.int64(i, 4)});
  }
  co_return due;
}

asio::awaitable<std::int64_t> record_check(connection& conn, const request_check& check) {
  params args{check.provider,
              check.destination,
              check.request_id,
              check.status,
              clean_text(check.detail, max_detail_bytes),
              std::to_string(check.next_check.count()),
              check.read ? "1" : "0"};
  const auto r = co_await conn.async_query(record_check_sql, std::move(args), status_timeout);
  co_return r.rows() == 0 ? 0 : r.int64(0, 0);
}

}  // namespace

asio::awaitable<outcome<std::vector<due_request>>> async_take_due_requests(connection& conn, std::size_t limit,
                                                                           std::chrono::seconds hold_for) {
  co_return co_await async_try(take_due(conn, limit, hold_for));
}

asio::awaitable<outcome<std::int64_t>> async_record_request_check(connection& conn, const request_check& check) {
  co_return co_await async_try(record_check(conn, check));
}

}  // namespace outbox::db

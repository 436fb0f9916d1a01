#include "db/personal_data_store.hpp"

#include "db/params.hpp"

namespace outbox::db {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::seconds personal_data_timeout{30};

constexpr const char* forget_sql =
    "SELECT rows_erased, rows_closed, rows_in_flight FROM outbox_forget_lead($1::bigint, $2, $3::boolean)";

// Oldest first, through the partial index of rows whose data is still there
// (sql/0014_personal_data_index.sql): each batch reads only what it erases.
// The attempts log loses the provider's answers (they may quote a value); the
// row keeps its ids, states, times, event name, value and currency, and its
// last_error (the dispatcher's own words and the provider's error code).
constexpr const char* erase_expired_sql = R"sql(
WITH victims AS (
    SELECT id FROM event_delivery
    WHERE personal_data_erased_at IS NULL AND final_state IS NOT NULL
      AND coalesce(sent_at, updated_at) < now() - least($1::bigint, $2::bigint) * interval '1 second'
      AND CASE WHEN final_state = 'sent' THEN sent_at < now() - $1::bigint * interval '1 second'
               ELSE updated_at < now() - $2::bigint * interval '1 second' END
    ORDER BY coalesce(sent_at, updated_at)
    LIMIT $3 FOR UPDATE SKIP LOCKED),
attempts AS (
    UPDATE event_delivery_attempt a SET response_excerpt = NULL
    WHERE a.delivery_id IN (SELECT id FROM victims) AND a.response_excerpt IS NOT NULL),
erased AS (
    UPDATE event_delivery d
    SET payload = outbox_erase_personal_data(d.payload), provider_response = NULL,
        personal_data_erased_at = now(), personal_data_erased_why = 'retention'
    FROM victims WHERE d.id = victims.id
    RETURNING d.id)
SELECT count(*) FROM erased)sql";

asio::awaitable<std::int64_t> erase_expired(connection& conn, const retention_request& req) {
  params args{std::to_string(req.sent_after.count()), std::to_string(req.dead_after.count()),
              std::to_string(req.batch)};
  const auto r = co_await conn.async_query(erase_expired_sql, std::move(args), personal_data_timeout);
  co_return r.int64(0, 0);
}

}  // namespace

asio::awaitable<forget_report> async_forget_lead(connection& conn, std::int64_t lead_project_id,
                                                 const std::string& requested_by, bool dry_run) {
  params args{std::to_string(lead_project_id), requested_by, dry_run ? "true" : "false"};
  const auto r = co_await conn.async_query(forget_sql, std::move(args), personal_data_timeout);
  co_return forget_report{r.int64(0, 0), r.int64(0, 1), r.int64(0, 2)};
}

asio::awaitable<void> async_record_personal_data_access(connection& conn, const std::string& accessed_by,
                                                        const std::string& what) {
  params args{accessed_by, what};
  (void)co_await conn.async_query("INSERT INTO outbox_personal_data_access (accessed_by, what) VALUES ($1, $2)",
                                  std::move(args), personal_data_timeout);
}

asio::awaitable<outcome<std::int64_t>> async_erase_expired_personal_data(connection& conn,
                                                                         const retention_request& req) {
  co_return co_await async_try(erase_expired(conn, req));
}

}  // namespace outbox::db

#include "db/wake_signal.hpp"
#include "db/transaction_sql.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;
constexpr auto wake_timeout = 10s;

constexpr const char* publish_awake_sql = R"sql(
INSERT INTO outbox_dispatcher_awake (instance, awake_until)
VALUES ($1, clock_timestamp() + $2::int * interval '1 millisecond')
ON CONFLICT (instance) DO UPDATE SET awake_until = EXCLUDED.awake_until)sql";

constexpr const char* publish_asleep_sql = R"sql(
DELETE FROM outbox_dispatcher_awake
WHERE instance = $1 OR awake_until < clock_timestamp() - interval '1 hour')sql";

constexpr const char* wake_mode_sql = "SELECT mode FROM outbox_wake_config";

constexpr const char* wake_status_sql = R"sql(
SELECT c.mode,
       coalesce((SELECT tgenabled <> 'D' FROM pg_trigger
                 WHERE tgrelid = 'event_delivery'::regclass AND tgname = 'event_delivery_notify_insert'), false),
       to_char(c.changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), coalesce(c.changed_by, '')
FROM outbox_wake_config c)sql";

constexpr const char* awake_list_sql = R"sql(
SELECT instance, extract(epoch FROM awake_until - clock_timestamp())::float8
FROM outbox_dispatcher_awake ORDER BY instance)sql";

constexpr const char* set_wake_mode_sql = "SELECT outbox_set_wake_mode($1, $2)";

}  // namespace

asio::awaitable<void> async_publish_awake(connection& conn, const std::string& instance,
                                          std::chrono::milliseconds ttl) {
  params args{instance, std::to_string(ttl.count())};
  (void)co_await conn.async_query_prepared("outbox_publish_awake", publish_awake_sql, std::move(args), wake_timeout);
}

asio::awaitable<void> async_publish_asleep(connection& conn, const std::string& instance) {
  params args{instance};
  (void)co_await conn.async_query_prepared("outbox_publish_asleep", publish_asleep_sql, std::move(args), wake_timeout);
}

asio::awaitable<std::string> async_wake_mode(connection& conn) {
  const auto r = co_await conn.async_query(wake_mode_sql, {}, wake_timeout);
  co_return r.rows() > 0 ? std::string(r.text(0, 0)) : std::string("always");
}

asio::awaitable<wake_status> async_wake_status(connection& conn) {
  const auto r = co_await conn.async_query(wake_status_sql, {}, wake_timeout);
  wake_status s;
  if (r.rows() > 0) {
    s.mode = r.text(0, 0);
    s.trigger_enabled = r.boolean(0, 1);
    s.changed_at = r.text(0, 2);
    s.changed_by = r.text(0, 3);
  }
  const auto a = co_await conn.async_query(awake_list_sql, {}, wake_timeout);
  for (int i = 0; i < a.rows(); ++i) {
    s.awake.push_back({std::string(a.text(i, 0)), std::stod(std::string(a.text(i, 1)))});
  }
  co_return s;
}

asio::awaitable<std::string> async_set_wake_mode(connection& conn, const std::string& mode, const std::string& actor,
                                                 std::chrono::milliseconds lock_timeout) {
  params timeout_args{std::to_string(lock_timeout.count()) + "ms"};
  (void)co_await conn.async_query(set_lock_timeout_sql, std::move(timeout_args), wake_timeout);
  params args{mode, actor};
  const auto r = co_await conn.async_query(set_wake_mode_sql, std::move(args), wake_timeout);
  co_return std::string(r.text(0, 0));
}

}  // namespace outbox::db

#include "dispatcher/db_link.hpp"

namespace outbox {
namespace {

using namespace std::chrono_literals;
constexpr auto connect_timeout = 5s;
// Server-side bound for every statement of the engine: none of them is meant to
// run longer than a few milliseconds; a stuck one must not hold locks for long.
constexpr auto server_statement_timeout = 30s;

}  // namespace

boost::asio::awaitable<db::connection*> db_link::async_get() {
  if (conn_ && conn_->is_open()) co_return &*conn_;
  conn_.reset();
  db::connect_options options;
  options.application_name = "outbox-dispatcher " + role_;
  options.statement_timeout = server_statement_timeout;
  auto fresh = co_await db::async_try(db::connection::async_connect(ctx_.ex, ctx_.cfg.database_url, connect_timeout,
                                                                    options));
  if (!fresh) {
    ++ctx_.metrics.db_errors;
    ctx_.log.warn("database connection failed; retrying", {{"role", role_}, {"error", fresh.error().what()}});
    co_return nullptr;
  }
  if (role_ == "claim") {
    // The claim is prepared once and runs all day. PostgreSQL's default plans
    // it anew at every call (its generic plan looks costlier on paper), about
    // 0.7 ms each; the generic plan is the same index scan (bench/statement_stats.sh).
    auto set = co_await db::async_try(fresh->async_query("SET plan_cache_mode = force_generic_plan", {}, 5s));
    if (!set) {
      ++ctx_.metrics.db_errors;
      ctx_.log.warn("database connection failed; retrying", {{"role", role_}, {"error", set.error().what()}});
      co_return nullptr;
    }
  }
  conn_.emplace(std::move(*fresh));
  ++generation_;
  ctx_.log.debug("database connected", {{"role", role_}});
  co_return &*conn_;
}

}  // namespace outbox

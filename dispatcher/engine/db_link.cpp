#include "dispatcher/engine/db_link.hpp"

#include <vector>

#include "db/delivery_sql.hpp"

namespace outbox {
namespace {

using namespace std::chrono_literals;
constexpr auto connect_timeout = 5s;
// Server-side bound for every statement of the engine: none of them is meant to
// run longer than a few milliseconds; a stuck one must not hold locks for long.
constexpr auto server_statement_timeout = 30s;

// The claim and the settle reuse cached plans all day (measured with
// bench/statement_stats.sh): the claim is prepared and was planned anew at
// every call (0.7 ms each) because its generic plan looks costlier on paper;
// small settles are prepared too and large ones planned for their size
// (db/delivery_store.cpp). Their session settings keep a cached plan made
// while the table was tiny from reading the whole table once it has grown
// (db/delivery_sql.hpp says how). The claim's commit may skip its WAL flush wait
// (OUTBOX_CLAIM_SYNCHRONOUS_COMMIT): not with a destination that holds reclaimed
// rows for on-call (ON_EXPIRED_LEASE=hold), which must find a row whose request
// may have gone out still in `sending` after a crash, not pending as if new.
bool claims_skip_flush_wait(const engine_context& ctx) {
  if (ctx.cfg.claim_synchronous_commit) return false;
  bool holds = false;
  ctx.destinations.for_each([&](const destination& d) { holds = holds || d.provider->hold_reclaimed(); });
  return !holds;
}

std::vector<const char*> session_settings(const std::string& role, const engine_context& ctx) {
  if (role == "claim" && claims_skip_flush_wait(ctx))
    return {db::sql::claim_session_settings, db::sql::claim_without_flush_wait};
  if (role == "claim") return {db::sql::claim_session_settings};
  if (role == "settle") return {db::sql::settle_session_settings};
  return {};
}

}  // namespace

boost::asio::awaitable<db::connection*> db_link::async_get() {
  if (conn_ && conn_->is_open()) co_return &*conn_;
  conn_.reset();
  db::connect_options options;
  options.application_name = "outbox-dispatcher " + role_;
  options.statement_timeout = server_statement_timeout;
  auto fresh =
      co_await db::async_try(db::connection::async_connect(ctx_.ex, ctx_.cfg.database_url, connect_timeout, options));
  if (!fresh) {
    ++ctx_.metrics.db_errors;
    ctx_.log.warn("database connection failed; retrying", {{"role", role_}, {"error", fresh.error().what()}});
    co_return nullptr;
  }
  for (const char* settings : session_settings(role_, ctx_)) {
    auto set = co_await db::async_try(fresh->async_query(settings, {}, 5s));
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

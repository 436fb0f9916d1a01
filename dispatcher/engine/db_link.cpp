#include "dispatcher/engine/db_link.hpp"

namespace outbox {

db_link::db_link(engine_runtime rt, db::delivery_store& store, std::string role)
    : rt_(rt), role_(std::move(role)), session_(store.open_session(role_)) {}

boost::asio::awaitable<db::store_session*> db_link::async_get() {
  if (session_->connected()) co_return session_.get();
  const auto opened = co_await session_->async_connect();
  if (!opened) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("database connection failed; retrying", {{"role", role_}, {"error", opened.error().what()}});
    co_return nullptr;
  }
  ++generation_;
  rt_.log.debug("database connected", {{"role", role_}});
  co_return session_.get();
}

}  // namespace outbox

#pragma once
// One role's database connection (claim, settle, maintenance): connects on
// demand, reports a failed connect once per attempt, and tells its user when
// a fresh connection replaced a lost one (what the lost one did may be unknown).
#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"
#include "dispatcher/engine/engine_context.hpp"

namespace outbox {

class db_link {
 public:
  db_link(engine_context& ctx, std::string role) : ctx_(ctx), role_(std::move(role)) {}

  // An open connection, connecting first if needed; nullptr when the connect failed.
  [[nodiscard]] boost::asio::awaitable<db::connection*> async_get();
  // Forget the connection after a failure that broke it (the next get reconnects).
  void drop() { conn_.reset(); }
  [[nodiscard]] bool connected() const { return conn_ && conn_->is_open(); }
  // Counts connects: a change means everything the previous connection did may be unknown.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  [[nodiscard]] const std::string& role() const noexcept { return role_; }

 private:
  engine_context& ctx_;
  std::string role_;
  std::optional<db::connection> conn_;
  std::uint64_t generation_ = 0;
};

}  // namespace outbox

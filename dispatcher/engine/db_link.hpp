#pragma once
// One role's session with the delivery store (claim, settle, maintenance,
// reconciler): connects on demand, reports a failed connect once per attempt,
// and tells its user when a fresh connection replaced a lost one (what the lost
// one did may be unknown).
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "db/store_port.hpp"
#include "dispatcher/engine/engine_runtime.hpp"

namespace outbox {

class db_link {
 public:
  db_link(engine_runtime rt, db::delivery_store& store, std::string role);

  // The connected session, connecting first if needed; nullptr when the connect failed.
  [[nodiscard]] boost::asio::awaitable<db::store_session*> async_get();
  // Forget the connection after a failure that broke it (the next get reconnects).
  void drop() { session_->drop(); }
  [[nodiscard]] bool connected() const { return session_->connected(); }
  // Counts connects: a change means everything the previous connection did may be unknown.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  [[nodiscard]] const std::string& role() const noexcept { return role_; }

 private:
  engine_runtime rt_;
  std::string role_;
  std::unique_ptr<db::store_session> session_;
  std::uint64_t generation_ = 0;
};

}  // namespace outbox

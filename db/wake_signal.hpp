#pragma once
// The adaptive wake signal (sql/0003_wake_modes.sql): a dispatcher that is
// draining publishes "awake" so the CRM's insert trigger can skip pg_notify,
// and withdraws it before it goes to sleep. Also reads and switches the mode.
#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"

namespace outbox::db {

// Marks `instance` awake until now + ttl (an upsert on an unlogged table).
[[nodiscard]] asio::awaitable<void> async_publish_awake(connection& conn, const std::string& instance,
                                                        std::chrono::milliseconds ttl);
// Withdraws `instance`, and forgets entries of dispatchers that died long ago.
[[nodiscard]] asio::awaitable<void> async_publish_asleep(connection& conn, const std::string& instance);

struct awake_dispatcher {
  std::string instance;
  double expires_in_seconds = 0;  // negative once expired
};

struct wake_status {
  std::string mode;  // always, adaptive or off
  bool trigger_enabled = true;
  std::string changed_at;
  std::string changed_by;
  std::vector<awake_dispatcher> awake;
};

[[nodiscard]] asio::awaitable<std::string> async_wake_mode(connection& conn);
[[nodiscard]] asio::awaitable<wake_status> async_wake_status(connection& conn);
// Switches the mode; returns the previous one. Waits at most `lock_timeout` for
// the table lock that enabling or disabling the trigger needs (db::error after).
[[nodiscard]] asio::awaitable<std::string> async_set_wake_mode(connection& conn, const std::string& mode,
                                                               const std::string& actor,
                                                               std::chrono::milliseconds lock_timeout);

}  // namespace outbox::db

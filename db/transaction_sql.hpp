#pragma once
// Transaction control and session settings, for the stores that run a
// transaction of several statements or bound how long they wait for a lock.

namespace outbox::db {

inline constexpr const char* begin_sql = "BEGIN";
inline constexpr const char* commit_sql = "COMMIT";
inline constexpr const char* rollback_sql = "ROLLBACK";
// $1: the wait as PostgreSQL writes it ("5000ms"); for the session, not only the transaction.
inline constexpr const char* set_lock_timeout_sql = "SELECT set_config('lock_timeout', $1, false)";

}  // namespace outbox::db

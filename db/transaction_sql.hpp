#pragma once
// Transaction control, for the stores that run a transaction of several statements.

namespace outbox::db {

inline constexpr const char* begin_sql = "BEGIN";
inline constexpr const char* commit_sql = "COMMIT";
inline constexpr const char* rollback_sql = "ROLLBACK";

}  // namespace outbox::db

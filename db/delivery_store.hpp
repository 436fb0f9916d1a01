#pragma once
// Every statement the engine runs against event_delivery: claim, settle, renew,
// release, sweep. Each is one short transaction, parameterized, and fenced by
// the lease token so a stale worker can never overwrite a newer outcome.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"

namespace outbox::db {

using sys_clock = std::chrono::system_clock;

struct claimed_row {
  std::int64_t id = 0;
  std::int64_t lead_project_id = 0;
  std::string provider;
  std::string destination;
  std::string event_name;
  std::string idempotency_key;
  std::string payload;  // jsonb as text (normalized by PostgreSQL, so stable across attempts)
  int attempts = 0;     // including this one
  sys_clock::time_point created_at;
  std::string lease_token;
  bool reclaimed = false;  // taken over from an expired lease (its previous sender may have sent it)
};

struct claim_request {
  std::string owner;  // per-boot instance id
  std::string token;  // fresh lease token for this claim
  std::chrono::seconds lease{30};
  int limit = 100;
  int max_attempts = 12;  // expired leases at or past this are left for the sweeper to kill
};

// held: kept for on-call review, never retried automatically (see provider::hold_reclaimed).
enum class settle_state { sent, pending, dead, held };

struct settlement {
  std::int64_t id = 0;
  std::string lease_token;
  settle_state state = settle_state::pending;
  std::chrono::milliseconds retry_delay{0};  // for pending
  bool refund_attempt = false;  // pending without counting this attempt (paused destination)
  int attempt = 0;              // attempt number, for the log
  sys_clock::time_point started_at;
  std::chrono::milliseconds duration{0};
  std::string outcome;  // attempt log outcome: delivered, retry, dead, paused...
  std::optional<int> http_status;
  std::string error;
  std::string response_excerpt;
};

struct sweep_request {
  bool dry_run = false;
  std::optional<std::string> provider;
  std::chrono::seconds older_than{0};  // lease expired at least this long ago
  int max_attempts = 12;               // rows at or past it become dead instead of pending
  // "provider/destination" keys whose expired rows go to `held` instead of pending
  // (destinations that must not resend after an uncertain attempt).
  std::vector<std::string> hold_destinations;
};

struct swept_row {
  std::int64_t id = 0;
  std::string provider;
  std::string destination;
  std::string previous_owner;
  int attempts = 0;
  std::string new_state;
  double expired_seconds_ago = 0;
};

// Claims up to `limit` due rows (pending and due, or sending with an expired lease).
[[nodiscard]] asio::awaitable<std::vector<claimed_row>> async_claim(connection& conn, const claim_request& req);

// Applies outcomes and logs each attempt; returns the ids actually settled. Rows
// missing from the result lost their lease (another worker owns them now).
[[nodiscard]] asio::awaitable<std::vector<std::int64_t>> async_settle(connection& conn, std::string owner,
                                                                      std::span<const settlement> batch);

// Extends the leases this worker still holds; returns how many were extended.
[[nodiscard]] asio::awaitable<std::int64_t> async_renew(connection& conn, std::span<const std::int64_t> ids,
                                                        std::span<const std::string> tokens,
                                                        std::chrono::seconds lease);

// Gives rows back unsent (shutdown): pending now, the attempt not counted.
[[nodiscard]] asio::awaitable<std::int64_t> async_release(connection& conn, std::span<const std::int64_t> ids,
                                                          std::span<const std::string> tokens);

// Resets expired leases (or lists them with dry_run) and logs each in the attempts table.
[[nodiscard]] asio::awaitable<std::vector<swept_row>> async_sweep(connection& conn, const sweep_request& req);

// Time until the earliest future next_attempt_at or lease expiry; nullopt when nothing is waiting.
[[nodiscard]] asio::awaitable<std::optional<std::chrono::milliseconds>> async_next_due(connection& conn);

}  // namespace outbox::db

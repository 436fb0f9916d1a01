#pragma once
// Every statement the engine runs against event_delivery: claim, settle, renew,
// release of lost claims, sweep. Each is one short transaction, parameterized,
// and fenced by the lease token so a stale worker can never overwrite a newer
// outcome. I/O failures come back as values (db::outcome), never as throws.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"
#include "db/error.hpp"

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

// A place in the claim's schedule order: next_attempt_at (microseconds since
// the epoch) and id.
struct claim_position {
  std::int64_t due_us = 0;
  std::int64_t id = 0;
  bool operator==(const claim_position&) const = default;
};
// The claim that starts at a position steps back to this long before its own
// time when the position is later (db/delivery_sql.hpp, the literal there).
inline constexpr std::chrono::seconds claim_scan_step_back{1};

struct claim_request {
  std::string owner;  // per-boot instance id
  std::string token;  // fresh lease token for this claim
  std::chrono::seconds lease{30};
  int limit = 100;
  int max_attempts = 12;  // expired leases at or past this are left for the sweeper to kill
  // "provider/destination" keys whose rows stay where they are (paused, circuit open).
  std::vector<std::string> skip_destinations;
  // When set, only this "provider/destination" (the probe after a pause).
  std::optional<std::string> only_destination;
  // The skipped destinations have few unsent rows: one ordered scan that steps
  // over them costs less than the claim destination by destination.
  bool few_skipped_rows = false;
  // Where the one ordered scan starts (nullopt: at the beginning): the first row
  // an earlier claim picked, every row before it skipped then. Ignored by the
  // claim by destination and the probe.
  std::optional<claim_position> scan_from;

  // Whether the claim is one ordered scan of the work index (sql::claim; it
  // honours scan_from), rather than destination by destination or the probe.
  [[nodiscard]] bool one_ordered_scan() const {
    return (skip_destinations.empty() || few_skipped_rows) && !only_destination;
  }
};

// held: kept for on-call review, never retried automatically (see provider::hold_reclaimed).
enum class settle_state { sent, pending, dead, held };
// The row's state as the table spells it.
[[nodiscard]] std::string_view to_string(settle_state s);

struct settlement {
  std::int64_t id = 0;
  std::string lease_token;
  settle_state state = settle_state::pending;
  std::chrono::milliseconds retry_delay{0};  // for pending
  bool refund_attempt = false;               // pending without counting this attempt (nothing was sent)
  bool log_attempt = true;                   // false for put-backs that made no request: no attempts-log row
  int attempt = 0;                           // attempt number, for the log
  sys_clock::time_point started_at;
  std::chrono::milliseconds duration{0};
  std::string outcome;  // attempt log outcome: delivered, retry, dead, paused...
  std::optional<int> http_status;
  std::string error;             // cleaned (valid UTF-8, no NUL, bounded) before it is sent
  std::string response_excerpt;  // likewise
  std::string note;              // attempts log only: what else to know about the attempt
  // The request went once before on a reused connection that closed without
  // answering: that try is logged as an attempt of its own (outcome
  // no_answer_resent, this long), before this one. The row's attempt count
  // and retry budget are not charged for it.
  std::optional<std::chrono::milliseconds> unanswered_first_try;
  std::vector<std::string> dropped_fields;  // attempts log: fields the provider left out, with why
  std::vector<std::string> match_keys;      // attempts log: match keys the request carried
  // Accepted by a provider that processes later (Google Data Manager): its request
  // id, kept in provider_request for status reconciliation after check_after.
  std::string provider_request_id;
  std::chrono::seconds status_check_after{0};
};

// What a settle did with each row of the batch. A row in neither list lost its
// lease (another worker owns it now); its outcome was logged as lease_lost.
struct settle_report {
  std::vector<std::int64_t> applied;
  // Already settled under the same token: an earlier send of this settle
  // committed although its answer was lost.
  std::vector<std::int64_t> already_applied;
};

struct sweep_request {
  bool dry_run = false;
  std::optional<std::string> provider;
  std::chrono::seconds older_than{0};  // lease expired at least this long ago
  // Defaults for destinations with no recorded policy (outbox_destination_policy).
  int max_attempts = 12;
  std::vector<std::string> hold_destinations;  // "provider/destination"
};

struct swept_row {
  std::int64_t id = 0;
  std::string provider;
  std::string destination;
  std::string previous_owner;
  int attempts = 0;
  std::string new_state;
  double expired_seconds_ago = 0;
  bool policy_known = false;  // a dispatcher recorded this destination's policy
};

// What a dispatcher records about one configured destination (sql/0004).
struct destination_policy {
  std::string provider;
  std::string destination;
  bool hold_reclaimed = false;
  int max_attempts = 12;
};

// What one claim statement found.
struct claim_batch {
  std::vector<claimed_row> rows;
  // Set when the claim was not full (and not restricted to one destination):
  // how long until the earliest row left is due or its lease expires
  // (0 when already; nullopt inside when there is none). What async_next_due
  // would answer right after the claim, without a statement of its own.
  std::optional<std::optional<std::chrono::milliseconds>> next_due;
  // The first row picked, in schedule order (nullopt when none was).
  std::optional<claim_position> first_picked;
};

// Claims up to `limit` due rows (pending and due, or sending with an expired lease).
[[nodiscard]] asio::awaitable<outcome<claim_batch>> async_claim_batch(connection& conn, const claim_request& req);
// The same, rows only.
[[nodiscard]] asio::awaitable<outcome<std::vector<claimed_row>>> async_claim(connection& conn,
                                                                             const claim_request& req);

// Applies outcomes and logs each attempt. Safe to send again when the answer
// was lost: rows it already recorded are reported, not changed twice.
[[nodiscard]] asio::awaitable<outcome<settle_report>> async_settle(connection& conn, std::string owner,
                                                                   std::span<const settlement> batch);

// Extends the leases this worker still holds; returns how many were extended.
[[nodiscard]] asio::awaitable<outcome<std::int64_t>> async_renew(connection& conn, std::span<const std::int64_t> ids,
                                                                 std::span<const std::string> tokens,
                                                                 std::chrono::seconds lease);

// Gives back rows in `sending` under `owner` whose token is none of
// `held_tokens` (claims whose answer was lost): pending now, the attempt not
// counted, nothing logged. Returns their ids. Run it between claims.
[[nodiscard]] asio::awaitable<outcome<std::vector<std::int64_t>>> async_release_orphans(
    connection& conn, const std::string& owner, std::span<const std::string> held_tokens);

// Resets expired leases (or lists them with dry_run) and logs each in the attempts table.
[[nodiscard]] asio::awaitable<outcome<std::vector<swept_row>>> async_sweep(connection& conn, const sweep_request& req);

// Time until the earliest future next_attempt_at or lease expiry; nullopt when nothing is waiting.
// Rows of `skip_destinations` are ignored (the claim leaves them alone).
[[nodiscard]] asio::awaitable<outcome<std::optional<std::chrono::milliseconds>>> async_next_due(
    connection& conn, std::span<const std::string> skip_destinations);

// Upserts the policies of this dispatcher's destinations.
[[nodiscard]] asio::awaitable<outcome<void>> async_record_policies(connection& conn, const std::string& owner,
                                                                   std::span<const destination_policy> policies);

}  // namespace outbox::db

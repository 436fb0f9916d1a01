#pragma once
// Statements behind the on-call commands (status, requeue, inspect, prune,
// pause/resume). Each is short and parameterized; requeue never touches the
// idempotency key, prune works in small batches that hold no long locks.
#include <chrono>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "db/connection.hpp"

namespace outbox::db {

// `status`: a JSON document (counts by state/provider/destination, ages, pauses).
[[nodiscard]] asio::awaitable<nlohmann::json> async_status(connection& conn);

struct queue_gauges {
  std::map<std::string, std::int64_t> rows_by_state;  // pending, sending, dead, held
  double oldest_due_seconds = 0;
};

// Cheap numbers for /metrics, read from the partial indexes.
[[nodiscard]] asio::awaitable<queue_gauges> async_queue_gauges(connection& conn);

struct requeue_filter {
  std::vector<std::int64_t> ids;
  std::optional<std::string> provider;
  std::optional<std::string> destination;
  std::optional<std::string> error_contains;
  std::optional<std::string> since;  // timestamptz text: rows that became dead/held at or after
  std::optional<std::string> until;
  std::vector<std::string> states{"dead", "held"};
  bool dry_run = false;
};

struct requeued_row {
  std::int64_t id = 0;
  std::string provider;
  std::string destination;
  std::string event_name;
  std::string previous_state;
  std::string last_error;
};

// Moves matching dead/held rows back to pending now, with a fresh attempt budget.
[[nodiscard]] asio::awaitable<std::vector<requeued_row>> async_requeue(connection& conn, const requeue_filter& f,
                                                                       std::string actor);

// `inspect`: the row and its attempts log; null when the id does not exist. Each
// attempt has its dropped_fields, match_keys, provider_request_id and, joined on
// (provider, destination, request id), provider_request {status, detail, row_count,
// accepted_at, checks, checked_at, next_check_at} or null.
[[nodiscard]] asio::awaitable<nlohmann::json> async_inspect(connection& conn, std::int64_t id);

struct prune_request {
  std::chrono::seconds older_than{30LL * 24 * 3600};
  int batch = 1000;
  bool archive = false;
  bool dry_run = false;
};

// Deletes (or archives) sent rows older than the period, batch by batch, and the
// final processing results (provider_request) of requests accepted before it;
// returns the count of rows.
[[nodiscard]] asio::awaitable<std::int64_t> async_prune(connection& conn, const prune_request& req);

struct destination_pause {
  std::string provider;
  std::string destination;
  std::string reason;
  std::string paused_at;
  std::string paused_by;
};

[[nodiscard]] asio::awaitable<std::vector<destination_pause>> async_list_pauses(connection& conn);
// Returns false when it was already paused (the reason is updated).
[[nodiscard]] asio::awaitable<bool> async_pause(connection& conn, const std::string& provider,
                                                const std::string& destination, const std::string& reason,
                                                const std::string& actor);
// Returns false when it was not paused. Waiting rows of the destination become due now.
[[nodiscard]] asio::awaitable<bool> async_resume(connection& conn, const std::string& provider,
                                                 const std::string& destination);

}  // namespace outbox::db

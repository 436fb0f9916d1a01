#pragma once
// Statements behind the on-call commands (status, requeue, discard, mark-sent,
// inspect, prune, pause/resume). Each is short and parameterized; no statement
// touches the idempotency key or payload, prune works in small batches that hold
// no long locks.
#include <chrono>
#include <cstdint>
#include <map>
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

// Cheap numbers for /metrics, read from the partial indexes. The oldest due row
// leaves out destinations paused by on-call (outbox_destination_pause) and those
// in `paused` ("provider/destination": this process's automatic pauses): their
// rows wait on purpose, and must not say that nothing claims rows.
[[nodiscard]] asio::awaitable<queue_gauges> async_queue_gauges(connection& conn,
                                                               const std::vector<std::string>& paused = {});

// Which rows an on-call command acts on (requeue, discard, mark-sent); every
// set field narrows it (AND). `since`/`until` are timestamptz text (see
// async_resolve_time) compared with updated_at, the row's last state change.
struct row_filter {
  std::vector<std::int64_t> ids;
  std::optional<std::int64_t> lead;  // lead_project_id
  std::optional<std::string> provider;
  std::optional<std::string> destination;
  std::optional<std::string> error_contains;
  std::optional<std::string> since;  // rows changed at or after
  std::optional<std::string> until;  // ... before
  std::vector<std::string> states{"dead", "held"};
  std::optional<std::int64_t> limit;  // the first N matching rows by id
  bool dry_run = false;
};
using requeue_filter = row_filter;

// A row a command changed (or would change, in a dry run), as it was before.
struct requeued_row {
  std::int64_t id = 0;
  std::string provider;
  std::string destination;
  std::string event_name;
  std::string previous_state;
  std::string last_error;
};
using changed_row = requeued_row;

// Moves matching dead/held rows back to pending now, with a fresh attempt budget.
[[nodiscard]] asio::awaitable<std::vector<requeued_row>> async_requeue(connection& conn, const requeue_filter& f,
                                                                       std::string actor);

// How many rows the filter names whose personal data was erased: requeue and
// mark-sent leave them out (their payload can no longer be sent).
[[nodiscard]] asio::awaitable<std::int64_t> async_count_erased(connection& conn, const row_filter& f);

// An on-call decision that settles rows without sending them.
enum class manual_settlement {
  discard,    // -> dead, last_error "discarded by ACTOR: REASON"; never sent
  mark_sent,  // -> sent now: the provider is known to have the event already
};

// Settles matching pending/held/dead rows (f.states may name only those; sending
// rows belong to a dispatcher) and records each in the attempts log (attempt 0,
// outcome `discarded` or `marked_sent`, by `actor`, with `reason`). Waits for rows
// another session has locked (bounded by the session's lock_timeout).
[[nodiscard]] asio::awaitable<std::vector<changed_row>> async_settle_by_hand(connection& conn, const row_filter& f,
                                                                             manual_settlement how, std::string actor,
                                                                             std::string reason);

// A --since/--until value: a time PostgreSQL reads, or an age ("1h": an hour ago).
struct time_arg {
  std::optional<std::string> absolute;  // e.g. "2026-11-30 08:00+00"
  std::optional<std::chrono::seconds> ago;
};

// The value as timestamptz text by the database's clock (what updated_at is
// compared with); nullopt when PostgreSQL cannot read `absolute` as a time.
[[nodiscard]] asio::awaitable<std::optional<std::string>> async_resolve_time(connection& conn, time_arg t);

// `inspect`: the row and its attempts log; null when the id does not exist. Each
// attempt has its dropped_fields, match_keys, provider_request_id and, joined on
// (provider, destination, request id), provider_request {status, detail, row_count,
// accepted_at, checks, checked_at, next_check_at} or null.
[[nodiscard]] asio::awaitable<nlohmann::json> async_inspect(connection& conn, std::int64_t id);

// `inspect --lead` / `--key`: ids of the rows of a lead or with an idempotency key,
// in id order. The key has no index: that lookup reads the whole table.
struct row_lookup {
  std::optional<std::int64_t> lead;
  std::optional<std::string> key;
};
[[nodiscard]] asio::awaitable<std::vector<std::int64_t>> async_find_rows(connection& conn, row_lookup what);

enum class prune_state {
  sent,  // by sent_at
  dead,  // by updated_at (when it became dead)
};

struct prune_request {
  prune_state state = prune_state::sent;
  std::chrono::seconds older_than{30LL * 24 * 3600};
  int batch = 1000;
  bool archive = false;
  bool dry_run = false;
};

// Deletes (or archives) sent or dead rows older than the period, with their
// attempts log, batch by batch; for sent rows also the final processing results
// (provider_request) of requests accepted before it. Returns the count of rows.
[[nodiscard]] asio::awaitable<std::int64_t> async_prune(connection& conn, const prune_request& req);

// Deletes event_delivery_archive rows archived longer ago than `older_than`
// (one statement: nothing else writes or locks archived rows); counts them when
// `dry_run`. Returns the count.
[[nodiscard]] asio::awaitable<std::int64_t> async_prune_archive(connection& conn, std::chrono::seconds older_than,
                                                                bool dry_run);

// Sets the session's lock_timeout: a statement waiting longer for a lock fails
// with SQLSTATE 55P03 instead of queueing behind a migration.
[[nodiscard]] asio::awaitable<void> async_set_lock_timeout(connection& conn, std::chrono::milliseconds timeout);

// Which database the connection is on, for messages: `"crm" on 10.0.0.5:5432`
// (the server's address; "local socket" for a Unix socket).
[[nodiscard]] asio::awaitable<std::string> async_database_label(connection& conn);

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

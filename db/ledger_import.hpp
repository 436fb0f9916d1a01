#pragma once
// `dispatcher import-ledgers`: turns the CRM's JSON "already sent" ledgers
// (one JSON object per lead and provider, {event_name: timestamp}) into `sent`
// event_delivery rows, so the dispatcher's unique (lead, provider, event) guard
// remembers what the old senders delivered. Server-side: one INSERT ... SELECT
// over jsonb_each per ledger column and batch of leads (keyset pagination on
// the id column, one short transaction per batch). Idempotent: ON CONFLICT DO
// NOTHING never changes an existing row, so a second run inserts nothing.
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"

namespace outbox::db {

// One JSON ledger column of the lead table and the provider its entries were sent to.
struct ledger_mapping {
  std::string column;    // e.g. capi_events_sent
  std::string provider;  // e.g. meta
};

// capi_events_sent=meta, tiktok_events_sent=tiktok, google_events_sent=google_data_manager.
[[nodiscard]] std::vector<ledger_mapping> default_ledger_mappings();

struct ledger_import_progress {
  std::int64_t leads_scanned = 0;  // so far
  std::int64_t last_id = 0;        // the highest lead id done
  int batches = 0;
};

struct ledger_import_request {
  std::string table = "lead_project";  // NAME or SCHEMA.NAME, used exactly as given (quoted)
  std::string id_column = "id";        // an integer column, ideally the primary key (keyset pagination)
  std::vector<ledger_mapping> ledgers = default_ledger_mappings();
  std::string destination = "default";
  int batch_size = 1000;                                        // leads per transaction, 1..100000
  bool dry_run = false;                                         // count only, in read-only transactions
  int sample_limit = 5;                                         // unparseable entries kept per ledger, for the report
  std::function<void(const ledger_import_progress&)> on_batch;  // optional, after every batch
};

// An entry (or a whole ledger) that could not be imported.
struct unparseable_entry {
  std::int64_t lead_id = 0;
  std::optional<std::string> event_name;  // nullopt when the ledger itself is not a JSON object
  std::string value;                      // the JSON value as found
  std::string reason;
};

struct ledger_import_counts {
  std::string column;
  std::string provider;
  // found = inserted + already_present + unparseable. A ledger that is not a
  // JSON object counts as one unparseable entry; NULL, JSON null and {} count nothing.
  std::int64_t found = 0;
  std::int64_t inserted = 0;         // in a dry run: would be inserted
  std::int64_t already_present = 0;  // a row for (lead, provider, event) exists, in any state
  // Of already_present: rows not `sent` (pending, sending, dead, held), i.e. enqueued
  // again after the old senders stopped; the dispatcher may still send them.
  std::int64_t present_not_sent = 0;
  std::int64_t unparseable = 0;
  std::vector<unparseable_entry> samples;  // the first `sample_limit`, by lead id
};

struct ledger_import_summary {
  std::string table;  // as quoted in SQL
  std::string destination;
  bool dry_run = false;
  std::int64_t leads_scanned = 0;
  int batches = 0;
  std::vector<ledger_import_counts> ledgers;  // in request order
};

// The source does not fit: an invalid or unknown identifier, a column of the
// wrong type, duplicate ledger columns, a bad batch size. Nothing was changed.
class ledger_import_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// PostgreSQL identifiers we accept: ^[A-Za-z_][A-Za-z0-9_]*$, at most 63 bytes.
[[nodiscard]] bool is_valid_identifier(std::string_view name);
// "name" or "schema.name", each part a valid identifier, quoted for SQL
// ("schema"."name"); nullopt when invalid.
[[nodiscard]] std::optional<std::string> quoted_table_name(std::string_view name);
// Checks identifiers, batch size and duplicates without touching the database;
// returns one line per problem (empty when the request is usable).
[[nodiscard]] std::vector<std::string> validate(const ledger_import_request& req);

// Checks the request (throws ledger_import_error, before any change), that the
// table and columns exist with usable types (id: smallint/integer/bigint;
// ledgers: json/jsonb), then imports batch by batch. Throws db::error on
// database failures; batches committed before a failure stay (a rerun skips them).
[[nodiscard]] asio::awaitable<ledger_import_summary> async_import_ledgers(connection& conn,
                                                                          const ledger_import_request& req);

}  // namespace outbox::db

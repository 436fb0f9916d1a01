#include "db/ledger_import.hpp"

#include <exception>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "db/transaction_sql.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;
constexpr auto import_timeout = 120s;
constexpr int max_batch_size = 100000;

// The statements below are templates: {table}, {id} and {column} are replaced
// by identifiers that passed is_valid_identifier() and are then quoted; every
// value is a parameter.

// The table (or view) and the requested columns with their types; no row when
// the table does not exist. $1: the quoted table name, $2: column names.
constexpr const char* describe_source_sql = R"sql(
SELECT c.oid::regclass::text, a.attname::text, a.atttypid::regtype::text
FROM pg_class c
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                        AND a.attname = ANY($2::text[])
WHERE c.oid = to_regclass($1))sql";

// The next batch of leads by id (keyset pagination): its highest id and size.
constexpr const char* next_batch_sql = R"sql(
SELECT max(k), count(*)
FROM (SELECT t.{id}::bigint AS k FROM {table} t WHERE t.{id} > $1::bigint ORDER BY t.{id} LIMIT $2::int) b)sql";

// One ledger column of the leads with $1 < id <= $2, as entries with a parsed
// time or the reason they cannot be imported. Never raises on bad data:
//   - the ledger must be a JSON object; NULL, JSON null and {} have no entries,
//     anything else is one unparseable entry with a NULL event name;
//   - a number (or a numeric string) is epoch seconds, or milliseconds from 1e11 up;
//   - a string is ISO-8601: date, optional time (T or space), optional
//     fraction, optional zone (Z, +HH, +HHMM, +HH:MM); no zone means UTC.
//     Each part is range-checked before it is used (Feb 30 is rejected);
//   - the time must lie between 1990 and a day from now.
// $3: provider, $4: how many unparseable samples to return.
constexpr const char* ledger_entries_sql = R"sql(
WITH ledger AS (
    SELECT t.{id}::bigint AS lead_id, t.{column}::jsonb AS doc
    FROM {table} t
    WHERE t.{id} > $1::bigint AND t.{id} <= $2::bigint AND t.{column} IS NOT NULL),
bad_ledger AS (
    SELECT lead_id, NULL::text AS event_name, doc AS raw,
           'the ledger is a JSON ' || jsonb_typeof(doc) || ', not an object' AS reason
    FROM ledger WHERE jsonb_typeof(doc) NOT IN ('object', 'null')),
entry AS (
    SELECT l.lead_id, e.key AS event_name, e.value AS raw
    FROM ledger l
    CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(l.doc) = 'object' THEN l.doc ELSE '{}'::jsonb END) e),
scanned AS (
    SELECT e.lead_id, e.event_name, e.raw,
           CASE jsonb_typeof(e.raw)
               WHEN 'number' THEN (e.raw #>> '{}')::numeric
               WHEN 'string' THEN CASE WHEN (e.raw #>> '{}') ~ '^[0-9]{1,15}(\.[0-9]+)?$'
                                       THEN (e.raw #>> '{}')::numeric END
           END AS epoch,
           CASE WHEN jsonb_typeof(e.raw) = 'string' THEN regexp_match(e.raw #>> '{}',
               '^\s*([0-9]{4})-([0-9]{2})-([0-9]{2})'
               '(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})([.,][0-9]+)?)?)?'
               '\s*(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2}))?)?\s*$') END AS m
    FROM entry e),
timed AS (
    SELECT s.lead_id, s.event_name, s.raw,
           CASE
               WHEN s.epoch >= 0 AND s.epoch < 1e11 THEN to_timestamp(s.epoch::float8)
               WHEN s.epoch >= 1e11 AND s.epoch < 1e14 THEN to_timestamp((s.epoch / 1000)::float8)
               WHEN s.m IS NOT NULL
                    AND s.m[1]::int BETWEEN 1900 AND 2200 AND s.m[2]::int BETWEEN 1 AND 12
                    AND s.m[3]::int BETWEEN 1 AND 31 AND coalesce(s.m[4]::int, 0) <= 23
                    AND coalesce(s.m[5]::int, 0) <= 59 AND coalesce(s.m[6]::int, 0) <= 59
                    AND coalesce(s.m[10]::int, 0) <= 15 AND coalesce(s.m[11]::int, 0) <= 59 THEN
                   CASE WHEN extract(day FROM make_date(s.m[1]::int, s.m[2]::int, 1) + (s.m[3]::int - 1)) = s.m[3]::int
                   THEN (((make_date(s.m[1]::int, s.m[2]::int, 1) + (s.m[3]::int - 1))::timestamp
                          + make_interval(hours => coalesce(s.m[4]::int, 0), mins => coalesce(s.m[5]::int, 0),
                                          secs => (coalesce(s.m[6]::int, 0)
                                                   + coalesce(('0' || replace(s.m[7], ',', '.'))::numeric, 0))::float8))
                         AT TIME ZONE 'UTC')
                        - CASE WHEN s.m[9] = '-' THEN -1 ELSE 1 END
                          * make_interval(hours => coalesce(s.m[10]::int, 0), mins => coalesce(s.m[11]::int, 0))
                   END
           END AS ts
    FROM scanned s),
parsed AS (
    SELECT t.lead_id, t.event_name, t.raw,
           CASE WHEN t.event_name = '' THEN 'empty event name'
                WHEN t.ts IS NULL THEN 'not a timestamp (expected ISO-8601 or epoch seconds)'
                WHEN t.ts < timestamptz '1990-01-01 00:00+00' OR t.ts > now() + interval '1 day'
                    THEN 'timestamp out of range (before 1990 or in the future)'
           END AS reason,
           t.ts AS sent_at
    FROM timed t),
samples AS (
    SELECT coalesce(json_agg(u ORDER BY u.lead_id, u.event_name NULLS FIRST), '[]')::text AS list FROM (
        SELECT lead_id, event_name, raw::text AS value, reason FROM (
            SELECT lead_id, event_name, raw, reason FROM parsed WHERE reason IS NOT NULL
            UNION ALL
            SELECT lead_id, event_name, raw, reason FROM bad_ledger) x
        ORDER BY lead_id, event_name NULLS FIRST LIMIT $4::int) u),
-- Entries whose row exists but is not `sent` (e.g. enqueued again by the CRM
-- after the old senders stopped): the dispatcher may still send them.
unsent AS (
    SELECT 1 FROM parsed p
    JOIN event_delivery d ON d.lead_project_id = p.lead_id AND d.provider = $3::text AND d.event_name = p.event_name
    WHERE p.reason IS NULL AND d.state <> 'sent'))sql";

// The import itself: found, importable, inserted, unparseable samples, present but unsent.
// `unsent` reads the snapshot from before the insert, so it sees only rows that existed.
// $5: the ledger column's name (recorded in the payload), $6: destination.
// ON CONFLICT DO NOTHING: a row that exists in any state is left as it is.
constexpr const char* import_ledger_tail_sql = R"sql(,
ins AS (
    INSERT INTO event_delivery (lead_project_id, provider, destination, event_name, idempotency_key, payload,
                                state, attempts, sent_at)
    SELECT p.lead_id, $3::text, $6::text, p.event_name, outbox_idempotency_key(p.lead_id, $3::text, p.event_name),
           jsonb_build_object('imported_from', $5::text,
                              'sent_at', to_char(p.sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                              'ledger_value', p.raw),
           'sent', 0, p.sent_at
    FROM parsed p WHERE p.reason IS NULL
    ORDER BY p.lead_id, p.event_name
    ON CONFLICT ON CONSTRAINT event_delivery_one_per_event DO NOTHING
    RETURNING 1)
SELECT (SELECT count(*) FROM parsed) + (SELECT count(*) FROM bad_ledger),
       (SELECT count(*) FROM parsed WHERE reason IS NULL),
       (SELECT count(*) FROM ins),
       (SELECT list FROM samples),
       (SELECT count(*) FROM unsent))sql";

// The dry run: the same counts, "inserted" being the importable entries that
// have no row yet. Runs in a read-only transaction.
constexpr const char* count_ledger_tail_sql = R"sql(
SELECT (SELECT count(*) FROM parsed) + (SELECT count(*) FROM bad_ledger),
       (SELECT count(*) FROM parsed WHERE reason IS NULL),
       (SELECT count(*) FROM parsed p
        WHERE p.reason IS NULL
          AND NOT EXISTS (SELECT 1 FROM event_delivery d
                          WHERE d.lead_project_id = p.lead_id AND d.provider = $3::text
                            AND d.event_name = p.event_name)),
       (SELECT list FROM samples),
       (SELECT count(*) FROM unsent))sql";

constexpr const char* begin_read_only_sql = "BEGIN READ ONLY";

struct source_names {
  std::string table;  // quoted
  std::string id;     // quoted
};

void replace_all(std::string& text, std::string_view placeholder, const std::string& value) {
  for (auto pos = text.find(placeholder); pos != std::string::npos; pos = text.find(placeholder, pos + value.size())) {
    text.replace(pos, placeholder.size(), value);
  }
}

std::string render(std::string sql, const source_names& names, const std::string& quoted_column = {}) {
  replace_all(sql, "{table}", names.table);
  replace_all(sql, "{id}", names.id);
  replace_all(sql, "{column}", quoted_column);
  return sql;
}

bool is_integer_type(std::string_view t) { return t == "smallint" || t == "integer" || t == "bigint"; }
bool is_json_type(std::string_view t) { return t == "json" || t == "jsonb"; }

// Fails with one line per problem when the table or a column is missing or unusable.
asio::awaitable<std::string> async_check_source(connection& conn, const ledger_import_request& req,
                                                const std::string& quoted_table) {
  std::vector<std::string> columns{req.id_column};
  for (const auto& l : req.ledgers) columns.push_back(l.column);
  params args{quoted_table, text_array(columns)};
  const auto r = co_await conn.async_query(describe_source_sql, std::move(args), import_timeout);
  if (r.rows() == 0) throw ledger_import_error("no table or view named " + quoted_table);
  const std::string resolved(r.text(0, 0));
  std::map<std::string, std::string> types;
  for (int i = 0; i < r.rows(); ++i) {
    if (!r.is_null(i, 1)) types[std::string(r.text(i, 1))] = std::string(r.text(i, 2));
  }
  std::string problems;
  const auto problem = [&](const std::string& line) { problems += (problems.empty() ? "" : "\n") + line; };
  const auto id_type = types.find(req.id_column);
  if (id_type == types.end()) {
    problem(resolved + " has no column " + quote_identifier(req.id_column));
  } else if (!is_integer_type(id_type->second)) {
    problem("id column " + quote_identifier(req.id_column) + " is " + id_type->second +
            "; it must be smallint, integer or bigint");
  }
  for (const auto& l : req.ledgers) {
    const auto t = types.find(l.column);
    if (t == types.end()) {
      problem(resolved + " has no column " + quote_identifier(l.column));
    } else if (!is_json_type(t->second)) {
      problem("ledger column " + quote_identifier(l.column) + " is " + t->second +
              "; it must be json or jsonb (for text, point --table at a view that casts it)");
    }
  }
  if (!problems.empty()) throw ledger_import_error(problems);
  co_return resolved;
}

struct ledger_batch_result {
  std::int64_t found = 0;
  std::int64_t importable = 0;
  std::int64_t inserted = 0;
  nlohmann::json samples;
  std::int64_t present_not_sent = 0;
};

ledger_batch_result read_batch_result(const result& r) {
  ledger_batch_result b;
  b.found = r.int64(0, 0);
  b.importable = r.int64(0, 1);
  b.inserted = r.int64(0, 2);
  b.samples = nlohmann::json::parse(r.text(0, 3));
  b.present_not_sent = r.int64(0, 4);
  return b;
}

void add_samples(ledger_import_counts& counts, const nlohmann::json& samples, int limit) {
  for (const auto& s : samples) {
    if (static_cast<int>(counts.samples.size()) >= limit) return;
    unparseable_entry e;
    e.lead_id = s.at("lead_id").get<std::int64_t>();
    if (!s.at("event_name").is_null()) e.event_name = s.at("event_name").get<std::string>();
    e.value = s.at("value").get<std::string>();
    e.reason = s.at("reason").get<std::string>();
    counts.samples.push_back(std::move(e));
  }
}

// One batch of leads, every ledger, in one transaction (read-only for a dry run).
asio::awaitable<void> async_import_batch(connection& conn, const ledger_import_request& req,
                                         const std::vector<std::string>& statements, std::int64_t low,
                                         std::int64_t high, ledger_import_summary& summary) {
  const params no_args;
  (void)co_await conn.async_query(req.dry_run ? begin_read_only_sql : begin_sql, no_args, import_timeout);
  std::vector<ledger_batch_result> results;
  std::exception_ptr failure;
  try {
    for (std::size_t i = 0; i < req.ledgers.size(); ++i) {
      params args{std::to_string(low), std::to_string(high), req.ledgers[i].provider, std::to_string(req.sample_limit)};
      if (!req.dry_run) {
        args.emplace_back(req.ledgers[i].column);
        args.emplace_back(req.destination);
      }
      const auto r = co_await conn.async_query(statements[i], std::move(args), import_timeout);
      results.push_back(read_batch_result(r));
    }
    (void)co_await conn.async_query(commit_sql, no_args, import_timeout);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    // Leave the connection usable; the original error is what matters.
    if (conn.is_open()) {
      try {
        (void)co_await conn.async_query(rollback_sql, no_args, import_timeout);
      } catch (const std::exception&) {
      }
    }
    std::rethrow_exception(failure);
  }
  // Counted only once the batch committed, so the summary matches the database.
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& c = summary.ledgers[i];
    const auto& b = results[i];
    c.found += b.found;
    c.inserted += b.inserted;
    c.already_present += b.importable - b.inserted;
    c.unparseable += b.found - b.importable;
    c.present_not_sent += b.present_not_sent;
    add_samples(c, b.samples, req.sample_limit);
  }
}

}  // namespace

// Google's ledger maps to google_data_manager, the default Google path of new
// setups (the Ads API refuses click-conversion uploads from integrations not
// allowlisted before 2026-06-15), so an old event enqueued again after the
// switch finds its row. Accounts staying on the Ads API pass
// --ledger google_events_sent=google_ads.
std::vector<ledger_mapping> default_ledger_mappings() {
  return {
      {"capi_events_sent", "meta"}, {"tiktok_events_sent", "tiktok"}, {"google_events_sent", "google_data_manager"}};
}

bool is_valid_identifier(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!letter(name.front())) return false;
  for (char c : name) {
    if (!letter(c) && !digit(c)) return false;
  }
  return true;
}

std::optional<std::string> quoted_table_name(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) {
    if (!is_valid_identifier(name)) return std::nullopt;
    return quote_identifier(name);
  }
  const auto schema = name.substr(0, dot);
  const auto table = name.substr(dot + 1);
  if (!is_valid_identifier(schema) || !is_valid_identifier(table)) return std::nullopt;
  return quote_identifier(schema) + "." + quote_identifier(table);
}

std::vector<std::string> validate(const ledger_import_request& req) {
  std::vector<std::string> problems;
  const std::string rule = " (letters, digits and _, not starting with a digit, at most 63)";
  if (!quoted_table_name(req.table)) problems.push_back("invalid table name '" + req.table + "'" + rule);
  if (!is_valid_identifier(req.id_column)) problems.push_back("invalid id column '" + req.id_column + "'" + rule);
  if (req.ledgers.empty()) problems.push_back("no ledger columns to import");
  std::set<std::string> seen;
  for (const auto& l : req.ledgers) {
    if (!is_valid_identifier(l.column)) problems.push_back("invalid ledger column '" + l.column + "'" + rule);
    if (l.provider.empty()) problems.push_back("ledger column '" + l.column + "' has no provider");
    if (!seen.insert(l.column).second) problems.push_back("ledger column '" + l.column + "' given twice");
    if (l.column == req.id_column) problems.push_back("ledger column '" + l.column + "' is the id column");
  }
  if (req.destination.empty()) problems.push_back("empty destination");
  if (req.batch_size < 1 || req.batch_size > max_batch_size) {
    problems.push_back("batch size must be 1.." + std::to_string(max_batch_size));
  }
  if (req.sample_limit < 0) problems.push_back("sample limit must not be negative");
  return problems;
}

asio::awaitable<ledger_import_summary> async_import_ledgers(connection& conn, const ledger_import_request& req) {
  const auto problems = validate(req);
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "\n") + p;
    throw ledger_import_error(text);
  }
  const source_names names{*quoted_table_name(req.table), quote_identifier(req.id_column)};
  ledger_import_summary summary;
  summary.table = co_await async_check_source(conn, req, names.table);
  summary.destination = req.destination;
  summary.dry_run = req.dry_run;
  std::vector<std::string> statements;
  for (const auto& l : req.ledgers) {
    ledger_import_counts c;
    c.column = l.column;
    c.provider = l.provider;
    summary.ledgers.push_back(std::move(c));
    statements.push_back(
        render(std::string(ledger_entries_sql) + (req.dry_run ? count_ledger_tail_sql : import_ledger_tail_sql), names,
               quote_identifier(l.column)));
  }
  const auto next_batch = render(next_batch_sql, names);
  std::int64_t low = std::numeric_limits<std::int64_t>::min();
  for (;;) {
    params args{std::to_string(low), std::to_string(req.batch_size)};
    const auto r = co_await conn.async_query(next_batch, std::move(args), import_timeout);
    const auto leads = r.int64(0, 1);
    if (leads == 0) break;
    const auto high = r.int64(0, 0);
    co_await async_import_batch(conn, req, statements, low, high, summary);
    summary.leads_scanned += leads;
    ++summary.batches;
    low = high;
    if (req.on_batch) req.on_batch(ledger_import_progress{summary.leads_scanned, high, summary.batches});
    if (leads < req.batch_size) break;
  }
  co_return summary;
}

}  // namespace outbox::db

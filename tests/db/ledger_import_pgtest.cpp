// `import-ledgers` against a realistic CRM lead table: json and jsonb ledger
// columns, NULL ledgers, empty maps, mixed timestamp formats, a malformed
// timestamp, a ledger that is not an object and a row that already exists.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "db/ledger_import.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace ledger_import_pgtest {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;
using outbox::db::ledger_import_request;
using outbox::db::ledger_import_summary;

namespace {

constexpr int lead_count = 300;

// lead_project as the CRM has it, plus `expected_entry`: every ledger entry
// that can be imported, with the instant it stands for. The ledgers are built
// from expected_entry, each entry written in one of the formats seen in the
// wild; then the broken entries are added on top.
//   capi_events_sent (jsonb):   id % 3 = 0: Lead as "...T...Z", Purchase as epoch seconds (number)
//                               id % 3 = 1: Lead as "YYYY-MM-DD HH:MM:SS.mmm" (no zone: UTC)
//                               id % 3 = 2: NULL; lead 2: JSON null
//                               lead 7: also Contact = "2024-13-45T99:00:00" (malformed)
//   tiktok_events_sent (json):  id % 4 = 0: SubmitForm as "...+02:00"; id % 4 = 1: {}; else NULL
//   google_events_sent (jsonb): id % 5 = 0: Lead as epoch milliseconds; even ones also
//                               Conversion as an epoch-seconds string; lead 11: ["Lead", "Purchase"]
// Lead 3 already has a pending meta/Lead row (enqueued by the CRM after the switch).
void seed_leads(const outbox::test::scratch_database& db) {
  outbox::test::sql_script(db.conninfo(), R"sql(
CREATE TABLE lead_project (
    id                 bigint PRIMARY KEY,
    name               text NOT NULL,
    capi_events_sent   jsonb,
    tiktok_events_sent json,
    google_events_sent jsonb);
INSERT INTO lead_project (id, name) SELECT g, 'lead ' || g FROM generate_series(1, 300) g;

CREATE TABLE expected_entry (
    lead_id bigint, ledger text, provider text, event_name text, sent_at timestamptz, shown jsonb);
INSERT INTO expected_entry
SELECT g, 'capi_events_sent', 'meta', 'Lead', t, to_jsonb(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM generate_series(1, 300) g, LATERAL (SELECT timestamptz '2024-01-05 10:00+00' + g * interval '1 minute' AS t) x
WHERE g % 3 = 0
UNION ALL
SELECT g, 'capi_events_sent', 'meta', 'Purchase', t, to_jsonb(extract(epoch FROM t)::bigint)
FROM generate_series(1, 300) g, LATERAL (SELECT timestamptz '2024-02-01 00:00+00' + g * interval '1 second' AS t) x
WHERE g % 3 = 0
UNION ALL
SELECT g, 'capi_events_sent', 'meta', 'Lead', t, to_jsonb(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'))
FROM generate_series(1, 300) g,
     LATERAL (SELECT timestamptz '2024-01-06 08:30:00.25+00' + g * interval '1 minute' AS t) x
WHERE g % 3 = 1
UNION ALL
SELECT g, 'tiktok_events_sent', 'tiktok', 'SubmitForm', t,
       to_jsonb(to_char((t + interval '2 hours') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+02:00')
FROM generate_series(1, 300) g, LATERAL (SELECT timestamptz '2024-03-01 10:00+00' + g * interval '1 second' AS t) x
WHERE g % 4 = 0
UNION ALL
SELECT g, 'google_events_sent', 'google_data_manager', 'Lead', t, to_jsonb((extract(epoch FROM t) * 1000)::bigint)
FROM generate_series(1, 300) g,
     LATERAL (SELECT timestamptz '2024-04-01 00:00:00.123+00' + g * interval '1 second' AS t) x
WHERE g % 5 = 0
UNION ALL
SELECT g, 'google_events_sent', 'google_data_manager', 'Conversion', t, to_jsonb(extract(epoch FROM t)::bigint::text)
FROM generate_series(1, 300) g, LATERAL (SELECT timestamptz '2024-04-02 00:00+00' + g * interval '1 hour' AS t) x
WHERE g % 10 = 0;

UPDATE lead_project l SET capi_events_sent = e.doc
FROM (SELECT lead_id, jsonb_object_agg(event_name, shown) AS doc FROM expected_entry
      WHERE ledger = 'capi_events_sent' GROUP BY lead_id) e WHERE l.id = e.lead_id;
UPDATE lead_project l SET tiktok_events_sent = e.doc::json
FROM (SELECT lead_id, jsonb_object_agg(event_name, shown) AS doc FROM expected_entry
      WHERE ledger = 'tiktok_events_sent' GROUP BY lead_id) e WHERE l.id = e.lead_id;
UPDATE lead_project l SET google_events_sent = e.doc
FROM (SELECT lead_id, jsonb_object_agg(event_name, shown) AS doc FROM expected_entry
      WHERE ledger = 'google_events_sent' GROUP BY lead_id) e WHERE l.id = e.lead_id;

UPDATE lead_project SET tiktok_events_sent = '{}' WHERE id % 4 = 1;
UPDATE lead_project SET capi_events_sent = 'null' WHERE id = 2;
UPDATE lead_project SET capi_events_sent = capi_events_sent || '{"Contact": "2024-13-45T99:00:00"}' WHERE id = 7;
UPDATE lead_project SET google_events_sent = '["Lead", "Purchase"]' WHERE id = 11;

SELECT enqueue_event_delivery(3, 'meta', 'Lead', '{"value": 1}'::jsonb);
)sql");
}

long long expected_count(const outbox::test::scratch_database& db, const std::string& ledger) {
  return db.scalar("SELECT count(*) FROM expected_entry WHERE ledger = $1", {ledger});
}

// Every column of every event_delivery row, as text: "nothing changed" checks.
std::string snapshot(const outbox::test::scratch_database& db, const std::string& where = "true") {
  const std::string sql = "SELECT coalesce(string_agg(d::text, E'\\n' ORDER BY id), '') FROM event_delivery d WHERE ";
  return std::string(db.query(sql + where).text(0, 0));
}

ledger_import_summary import(const outbox::test::scratch_database& db, const ledger_import_request& req) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<ledger_import_summary> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_import_ledgers(c, req);
  });
}

// The message of the ledger_import_error the import throws, or "" when it does not.
std::string import_error(const outbox::test::scratch_database& db, const ledger_import_request& req) {
  try {
    (void)import(db, req);
  } catch (const outbox::db::ledger_import_error& e) {
    return e.what();
  }
  return "";
}

const outbox::db::ledger_import_counts& ledger(const ledger_import_summary& s, const std::string& column) {
  for (const auto& l : s.ledgers) {
    if (l.column == column) return l;
  }
  FAIL("no ledger " << column << " in the summary");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("import-ledgers: ledger identifiers are validated before anything is sent to the database") {
  using outbox::db::is_valid_identifier;
  CHECK(is_valid_identifier("lead_project"));
  CHECK(is_valid_identifier("_x9"));
  CHECK(is_valid_identifier("Lead_Project"));
  CHECK(is_valid_identifier(std::string(63, 'a')));
  CHECK_FALSE(is_valid_identifier(""));
  CHECK_FALSE(is_valid_identifier(std::string(64, 'a')));
  CHECK_FALSE(is_valid_identifier("1lead"));
  CHECK_FALSE(is_valid_identifier("lead-project"));
  CHECK_FALSE(is_valid_identifier("lead project"));
  CHECK_FALSE(is_valid_identifier("\"lead\""));
  CHECK_FALSE(is_valid_identifier("lead;DROP TABLE event_delivery"));
  CHECK_FALSE(is_valid_identifier("l\u00e9ad"));  // non-ASCII (UTF-8 of U+00E9)

  CHECK(outbox::db::quoted_table_name("lead_project") == "\"lead_project\"");
  CHECK(outbox::db::quoted_table_name("crm.Leads") == "\"crm\".\"Leads\"");
  CHECK_FALSE(outbox::db::quoted_table_name("a.b.c").has_value());
  CHECK_FALSE(outbox::db::quoted_table_name(".leads").has_value());
  CHECK_FALSE(outbox::db::quoted_table_name("crm.").has_value());
  CHECK_FALSE(outbox::db::quoted_table_name("crm.le\"ads").has_value());

  ledger_import_request ok;
  CHECK(outbox::db::validate(ok).empty());

  ledger_import_request bad;
  bad.table = "lead_project; DROP TABLE event_delivery";
  bad.id_column = "id)";
  bad.ledgers = {{"capi events", "meta"}, {"x", ""}, {"dup", "meta"}, {"dup", "tiktok"}};
  bad.destination = "";
  bad.batch_size = 0;
  const auto problems = outbox::db::validate(bad);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  INFO(all);
  CHECK(problems.size() == 7);
  CHECK(all.find("invalid table name") != std::string::npos);
  CHECK(all.find("invalid id column") != std::string::npos);
  CHECK(all.find("invalid ledger column 'capi events'") != std::string::npos);
  CHECK(all.find("has no provider") != std::string::npos);
  CHECK(all.find("'dup' given twice") != std::string::npos);
  CHECK(all.find("empty destination") != std::string::npos);
  CHECK(all.find("batch size") != std::string::npos);

  ledger_import_request none;
  none.ledgers.clear();
  CHECK(outbox::db::validate(none).size() == 1);
}

TEST_CASE("import-ledgers records every ledger entry as a sent row, leaves existing rows alone, and is idempotent") {
  outbox::test::scratch_database db;
  seed_leads(db);
  const auto meta_n = expected_count(db, "capi_events_sent");
  const auto tiktok_n = expected_count(db, "tiktok_events_sent");
  const auto google_n = expected_count(db, "google_events_sent");
  REQUIRE(meta_n == 300);  // 100 leads with Lead and Purchase, 100 with Lead only
  REQUIRE(tiktok_n == 75);
  REQUIRE(google_n == 90);  // 60 Lead + 30 Conversion
  const auto pending_before = snapshot(db, "state = 'pending'");
  REQUIRE(db.scalar("SELECT count(*) FROM event_delivery") == 1);

  // The dry run counts exactly what the import will do and changes nothing.
  ledger_import_request dry;
  dry.dry_run = true;
  const auto preview = import(db, dry);
  CHECK(preview.dry_run);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 1);
  CHECK(snapshot(db) == pending_before);

  ledger_import_request req;
  req.batch_size = 7;  // many batches, with a short last one
  std::vector<outbox::db::ledger_import_progress> progress;
  req.on_batch = [&](const outbox::db::ledger_import_progress& p) { progress.push_back(p); };
  const auto first = import(db, req);

  CHECK_FALSE(first.dry_run);
  CHECK(first.table == "lead_project");
  CHECK(first.destination == "default");
  CHECK(first.leads_scanned == lead_count);
  CHECK(first.batches == (lead_count + 6) / 7);
  REQUIRE(progress.size() == static_cast<std::size_t>(first.batches));
  CHECK(progress.back().leads_scanned == lead_count);
  CHECK(progress.back().last_id == lead_count);
  CHECK(progress.front().last_id == 7);
  REQUIRE(first.ledgers.size() == 3);
  CHECK(first.ledgers[0].column == "capi_events_sent");
  CHECK(first.ledgers[1].provider == "tiktok");
  // Google's ledger goes to Data Manager, the default Google path (the Ads API
  // refuses click-conversion uploads from new integrations since 2026-06-15).
  CHECK(first.ledgers[2].column == "google_events_sent");
  CHECK(first.ledgers[2].provider == "google_data_manager");

  const auto& meta = ledger(first, "capi_events_sent");
  CHECK(meta.provider == "meta");
  CHECK(meta.found == meta_n + 1);     // plus lead 7's malformed Contact
  CHECK(meta.inserted == meta_n - 1);  // lead 3's Lead exists (pending)
  CHECK(meta.already_present == 1);
  CHECK(meta.present_not_sent == 1);  // lead 3's pending Lead: the dispatcher would send it
  CHECK(meta.unparseable == 1);
  REQUIRE(meta.samples.size() == 1);
  CHECK(meta.samples[0].lead_id == 7);
  CHECK(meta.samples[0].event_name == std::optional<std::string>("Contact"));
  CHECK(meta.samples[0].value == "\"2024-13-45T99:00:00\"");
  CHECK(meta.samples[0].reason.find("not a timestamp") != std::string::npos);

  const auto& tiktok = ledger(first, "tiktok_events_sent");
  CHECK(tiktok.found == tiktok_n);
  CHECK(tiktok.inserted == tiktok_n);
  CHECK(tiktok.already_present == 0);
  CHECK(tiktok.present_not_sent == 0);
  CHECK(tiktok.unparseable == 0);
  CHECK(tiktok.samples.empty());

  const auto& google = ledger(first, "google_events_sent");
  CHECK(google.found == google_n + 1);  // plus lead 11's array ledger
  CHECK(google.inserted == google_n);
  CHECK(google.unparseable == 1);
  REQUIRE(google.samples.size() == 1);
  CHECK(google.samples[0].lead_id == 11);
  CHECK_FALSE(google.samples[0].event_name.has_value());
  CHECK(google.samples[0].reason.find("array") != std::string::npos);

  // The dry run predicted the same numbers.
  for (std::size_t i = 0; i < first.ledgers.size(); ++i) {
    CAPTURE(first.ledgers[i].column);
    CHECK(preview.ledgers[i].found == first.ledgers[i].found);
    CHECK(preview.ledgers[i].inserted == first.ledgers[i].inserted);
    CHECK(preview.ledgers[i].already_present == first.ledgers[i].already_present);
    CHECK(preview.ledgers[i].unparseable == first.ledgers[i].unparseable);
    CHECK(preview.ledgers[i].present_not_sent == first.ledgers[i].present_not_sent);
  }

  // One row per importable entry, exactly as enqueue would key it, sent at the ledger's time.
  const auto total = meta_n + tiktok_n + google_n;
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == total);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == total - 1);
  CHECK(db.scalar(R"sql(
      SELECT count(*) FROM expected_entry e JOIN event_delivery d
        ON d.lead_project_id = e.lead_id AND d.provider = e.provider AND d.event_name = e.event_name
      WHERE d.state = 'sent' AND d.sent_at = e.sent_at AND d.destination = 'default'
        AND d.idempotency_key = outbox_idempotency_key(e.lead_id, e.provider, e.event_name)
        AND d.attempts = 0 AND d.last_error IS NULL AND d.lease_token IS NULL
        AND d.payload->>'imported_from' = e.ledger
        AND (d.payload->>'sent_at')::timestamptz = e.sent_at
        AND d.payload->'ledger_value' = e.shown)sql") == total - 1);
  // A few instants spelled out, one per format.
  const auto sent_at = [&](int lead, const char* provider, const char* event) {
    return std::string(db.query("SELECT to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
                                "FROM event_delivery WHERE lead_project_id = $1 AND provider = $2 AND event_name = $3",
                                {std::to_string(lead), provider, event})
                           .text(0, 0));
  };
  CHECK(sent_at(6, "meta", "Lead") == "2024-01-05 10:06:00.000000");                        // ISO with Z
  CHECK(sent_at(6, "meta", "Purchase") == "2024-02-01 00:00:06.000000");                    // epoch seconds
  CHECK(sent_at(4, "meta", "Lead") == "2024-01-06 08:34:00.250000");                        // no zone: UTC
  CHECK(sent_at(8, "tiktok", "SubmitForm") == "2024-03-01 10:00:08.000000");                // +02:00
  CHECK(sent_at(10, "google_data_manager", "Lead") == "2024-04-01 00:00:10.123000");        // epoch milliseconds
  CHECK(sent_at(10, "google_data_manager", "Conversion") == "2024-04-02 10:00:00.000000");  // epoch string
  const auto key_of_lead_6 = db.query(
      "SELECT idempotency_key FROM event_delivery WHERE lead_project_id = 6 AND provider = 'meta' AND event_name = "
      "'Lead'");
  CHECK(key_of_lead_6.text(0, 0) == db.query("SELECT outbox_idempotency_key(6, 'meta', 'Lead')").text(0, 0));
  // Nothing for the malformed entry, the array ledger, JSON null, or empty maps.
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 7 AND event_name = 'Contact'") == 0);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id IN (2, 11)") == 0);
  // The row that existed is still pending and untouched.
  CHECK(snapshot(db, "state = 'pending'") == pending_before);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE lead_project_id = 3 AND provider = 'meta' "
                  "AND event_name = 'Lead' AND state = 'pending' AND payload = '{\"value\": 1}'") == 1);

  // A second run finds the same entries and inserts nothing.
  const auto after_first = snapshot(db);
  ledger_import_request again;
  const auto second = import(db, again);
  CHECK(second.batches == 1);
  for (const auto& l : second.ledgers) {
    CAPTURE(l.column);
    CHECK(l.inserted == 0);
    CHECK(l.already_present == l.found - l.unparseable);
  }
  CHECK(ledger(second, "capi_events_sent").already_present == meta_n);
  CHECK(ledger(second, "capi_events_sent").present_not_sent == 1);
  CHECK(ledger(second, "tiktok_events_sent").present_not_sent == 0);
  CHECK(snapshot(db) == after_first);

  // And so does a dry run now.
  const auto preview_after = import(db, dry);
  for (const auto& l : preview_after.ledgers) CHECK(l.inserted == 0);

  // The CRM re-fires an old Google event through the default fan-out
  // (google_data_manager): the imported row catches it, nothing new to send.
  CHECK(db.query("SELECT enqueue_event_delivery(10, 'google_data_manager', 'Lead', '{}'::jsonb)").text(0, 0) == "f");
  CHECK(snapshot(db) == after_first);
}

TEST_CASE("import-ledgers dry run changes nothing and reports at most the sample limit") {
  outbox::test::scratch_database db;
  seed_leads(db);
  // Many broken entries: every lead's tiktok ledger gets a bad one.
  db.query("UPDATE lead_project SET tiktok_events_sent = '{\"ViewContent\": \"yesterday\"}' WHERE id % 4 <> 0");
  const auto before = snapshot(db);
  ledger_import_request dry;
  dry.dry_run = true;
  dry.sample_limit = 3;
  dry.ledgers = {{"tiktok_events_sent", "tiktok"}};
  const auto s = import(db, dry);
  CHECK(snapshot(db) == before);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 1);
  REQUIRE(s.ledgers.size() == 1);
  CHECK(s.ledgers[0].unparseable == 225);
  CHECK(s.ledgers[0].inserted == 75);
  REQUIRE(s.ledgers[0].samples.size() == 3);
  CHECK(s.ledgers[0].samples[0].lead_id == 1);
  CHECK(s.ledgers[0].samples[1].lead_id == 2);
  CHECK(s.ledgers[0].samples[2].lead_id == 3);
}

TEST_CASE("import-ledgers accepts other timestamp spellings and reports the ones it cannot read") {
  outbox::test::scratch_database db;
  outbox::test::sql_script(db.conninfo(), R"sql(
CREATE TABLE lead_project (id integer PRIMARY KEY, capi_events_sent jsonb);
INSERT INTO lead_project VALUES (1, '{
  "a": "2024-05-06T07:08:09.123456+00:00",
  "b": "2024-05-06T07:08:09-0330",
  "c": "2024-05-06t07:08z",
  "d": "2024-05-06",
  "e": 1714979289.5,
  "f": "2024-02-29T12:00:00Z",
  "g": "2023-02-29T12:00:00Z",
  "h": "2024-05-06T24:00:00Z",
  "i": "next tuesday",
  "j": true,
  "k": null,
  "l": {"at": "2024-05-06"},
  "m": "2999-01-01T00:00:00Z",
  "n": -5,
  "o": "0000-01-01",
  "p": "2024-05-06T07:08:09+99:00"
}'), (2, '"2024-05-06"'), (3, '7'), (4, '{}'), (5, NULL);
)sql");
  ledger_import_request req;
  req.ledgers = {{"capi_events_sent", "meta"}};
  req.sample_limit = 100;
  const auto s = import(db, req);
  REQUIRE(s.ledgers.size() == 1);
  const auto& l = s.ledgers[0];
  CHECK(l.found == 16 + 2);
  CHECK(l.inserted == 6);
  CHECK(l.unparseable == 12);
  std::string bad;
  for (const auto& u : l.samples) bad += std::to_string(u.lead_id) + ":" + u.event_name.value_or("-") + " ";
  CHECK(bad == "1:g 1:h 1:i 1:j 1:k 1:l 1:m 1:n 1:o 1:p 2:- 3:- ");
  const auto at = [&](const char* event) {
    return std::string(db.query("SELECT to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
                                "FROM event_delivery WHERE event_name = $1",
                                {event})
                           .text(0, 0));
  };
  CHECK(at("a") == "2024-05-06 07:08:09.123456");
  CHECK(at("b") == "2024-05-06 10:38:09.000000");
  CHECK(at("c") == "2024-05-06 07:08:00.000000");
  CHECK(at("d") == "2024-05-06 00:00:00.000000");
  CHECK(at("e") == "2024-05-06 07:08:09.500000");
  CHECK(at("f") == "2024-02-29 12:00:00.000000");
}

TEST_CASE("import-ledgers with a custom table, id column, mappings and destination") {
  outbox::test::scratch_database db;
  outbox::test::sql_script(db.conninfo(), R"sql(
CREATE SCHEMA crm;
CREATE TABLE crm."Leads" (lead_pk integer PRIMARY KEY, fb_sent json, hooks_sent jsonb, capi_events_sent jsonb);
INSERT INTO crm."Leads"
SELECT g, json_build_object('Lead', '2024-06-01T00:00:00Z'), jsonb_build_object('Lead', 1717200000, 'Sale', 1717200060),
       '{"Lead": "2024-06-01T00:00:00Z"}'
FROM generate_series(101, 150) g;
-- A text ledger (an old Django JSONField) through a view that casts it.
CREATE TABLE legacy_leads (id bigint PRIMARY KEY, sent_log text);
INSERT INTO legacy_leads VALUES (1, '{"Lead": "2024-06-02T00:00:00Z"}'), (2, NULL);
CREATE VIEW legacy_leads_json AS SELECT id, sent_log::jsonb AS sent_log FROM legacy_leads;
)sql");
  ledger_import_request req;
  req.table = "crm.Leads";
  req.id_column = "lead_pk";
  req.ledgers = {{"fb_sent", "meta"}, {"hooks_sent", "webhook"}};
  req.destination = "crm_hook";
  req.batch_size = 1000;
  const auto s = import(db, req);
  CHECK(s.table == "crm.\"Leads\"");
  CHECK(s.leads_scanned == 50);
  CHECK(s.batches == 1);
  REQUIRE(s.ledgers.size() == 2);
  CHECK(s.ledgers[0].inserted == 50);
  CHECK(s.ledgers[1].inserted == 100);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 150);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE destination = 'crm_hook' AND state = 'sent' "
                  "AND lead_project_id BETWEEN 101 AND 150") == 150);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'webhook' AND event_name = 'Sale' "
                  "AND sent_at = to_timestamp(1717200060) AND payload->>'imported_from' = 'hooks_sent'") == 50);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'meta' AND idempotency_key = "
                  "outbox_idempotency_key(lead_project_id, 'meta', 'Lead')") == 50);
  // capi_events_sent was not asked for: the given mappings replace the defaults.
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE payload->>'imported_from' = 'capi_events_sent'") == 0);

  ledger_import_request view;
  view.table = "legacy_leads_json";
  view.ledgers = {{"sent_log", "tiktok"}};
  const auto v = import(db, view);
  CHECK(v.ledgers[0].inserted == 1);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'tiktok' AND lead_project_id = 1 "
                  "AND sent_at = '2024-06-02T00:00:00Z'") == 1);
}

TEST_CASE("import-ledgers rejects bad identifiers and unusable sources without changing anything") {
  outbox::test::scratch_database db;
  seed_leads(db);
  outbox::test::sql_script(db.conninfo(),
                           "CREATE TABLE text_leads (id text PRIMARY KEY, capi_events_sent text);"
                           "CREATE TABLE \"lead_project; DROP TABLE event_delivery; --\" (id bigint);");
  const auto before = snapshot(db);

  ledger_import_request injection;
  injection.table = "lead_project; DROP TABLE event_delivery; --";
  CHECK(import_error(db, injection).find("invalid table name") != std::string::npos);
  ledger_import_request quoted;
  quoted.table = "\"lead_project\"";
  CHECK(import_error(db, quoted).find("invalid table name") != std::string::npos);
  ledger_import_request bad_column;
  bad_column.ledgers = {{"capi_events_sent\" FROM pg_authid --", "meta"}};
  CHECK(import_error(db, bad_column).find("invalid ledger column") != std::string::npos);
  ledger_import_request bad_id;
  bad_id.id_column = "id::text";
  CHECK(import_error(db, bad_id).find("invalid id column") != std::string::npos);

  ledger_import_request missing_table;
  missing_table.table = "lead_projects";
  CHECK(import_error(db, missing_table).find("no table or view named \"lead_projects\"") != std::string::npos);
  ledger_import_request missing_schema;
  missing_schema.table = "nope.lead_project";
  CHECK(import_error(db, missing_schema).find("no table or view") != std::string::npos);
  ledger_import_request case_matters;
  case_matters.table = "Lead_Project";  // quoted, so not folded to lower case
  CHECK(import_error(db, case_matters).find("no table or view") != std::string::npos);

  ledger_import_request missing_column;
  missing_column.ledgers = {{"capi_events_sent", "meta"}, {"snapchat_events_sent", "webhook"}};
  const auto missing = import_error(db, missing_column);
  CHECK(missing.find("has no column \"snapchat_events_sent\"") != std::string::npos);
  CHECK(missing.find("capi_events_sent") == std::string::npos);

  ledger_import_request wrong_types;
  wrong_types.table = "text_leads";
  wrong_types.ledgers = {{"capi_events_sent", "meta"}};
  const auto types = import_error(db, wrong_types);
  CHECK(types.find("id column \"id\" is text") != std::string::npos);
  CHECK(types.find("ledger column \"capi_events_sent\" is text") != std::string::npos);

  ledger_import_request not_a_ledger;
  not_a_ledger.ledgers = {{"name", "meta"}};
  CHECK(import_error(db, not_a_ledger).find("\"name\" is text") != std::string::npos);

  CHECK(snapshot(db) == before);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery") == 1);
}

}  // namespace ledger_import_pgtest

// `dispatcher import-ledgers` as on-call runs it: the real executable against a
// scratch database with a small CRM lead table. Dry run, import, rerun, --json,
// and the exit codes for bad arguments and unusable sources.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace import_ledgers_e2e {

using outbox::environment;
using outbox::test::cli_result;
using outbox::test::run_cli;
using outbox::test::scratch_database;

namespace {

// 40 leads; meta and tiktok ledgers, a Google Lead (epoch milliseconds) for
// every tenth lead; lead 5 has one malformed entry and lead 6 already has a
// pending meta/Lead row.
void seed(const scratch_database& db) {
  outbox::test::sql_script(db.conninfo(), R"sql(
CREATE TABLE lead_project (id bigint PRIMARY KEY, capi_events_sent jsonb, tiktok_events_sent json,
                           google_events_sent jsonb);
INSERT INTO lead_project
SELECT g, jsonb_build_object('Lead', '2024-01-05T10:00:00Z', 'Purchase', 1704448800 + g),
       CASE WHEN g % 2 = 0 THEN json_build_object('SubmitForm', '2024-01-05 11:00:00') END,
       CASE WHEN g % 10 = 0 THEN jsonb_build_object('Lead', 1704448800123 + g) WHEN g % 4 = 0 THEN '{}'::jsonb END
FROM generate_series(1, 40) g;
UPDATE lead_project SET capi_events_sent = capi_events_sent || '{"Contact": "not a date"}' WHERE id = 5;
SELECT enqueue_event_delivery(6, 'meta', 'Lead', '{}'::jsonb);
)sql");
}

environment env_for(const scratch_database& db) { return {{"DATABASE_URL", db.conninfo()}}; }

std::string table(const scratch_database& db) {
  return std::string(
      db.query("SELECT coalesce(string_agg(d::text, E'\\n' ORDER BY id), '') FROM event_delivery d").text(0, 0));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("import-ledgers CLI: dry run, import, second run, --json summary") {
  scratch_database db;
  seed(db);
  const auto env = env_for(db);
  const auto before = table(db);

  const auto dry = run_cli({"import-ledgers", "--dry-run"}, env);
  INFO(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(contains(dry.output, "would insert"));
  CHECK(contains(dry.output, "dry run"));
  CHECK(contains(dry.output, "lead 5  event \"Contact\""));
  CHECK(contains(dry.output, "note: 1 meta row(s) from capi_events_sent exist but are not sent"));
  CHECK(table(db) == before);

  const auto real = run_cli({"import-ledgers", "--batch-size", "7"}, env);
  INFO(real.output);
  CHECK(real.exit_code == 0);
  CHECK(contains(real.output, "scanned 40 lead(s) of lead_project in 6 batch(es)"));
  CHECK(contains(real.output, "unparseable in capi_events_sent (meta), 1 of 1:"));
  // meta: 40 Lead + 40 Purchase + 1 malformed; lead 6's Lead exists. tiktok: 20 entries.
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent' AND provider = 'meta'") == 79);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent' AND provider = 'tiktok' "
                  "AND sent_at = '2024-01-05 11:00:00+00'") == 20);
  // Google's ledger goes to Data Manager by default (the Ads API refuses new integrations).
  CHECK(contains(real.output, "google_events_sent  google_data_manager"));
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent' AND provider = 'google_data_manager' "
                  "AND event_name = 'Lead'") == 4);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'google_ads'") == 0);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'pending'") == 1);

  const auto again = run_cli({"import-ledgers", "--json"}, env);
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  const auto doc = nlohmann::json::parse(again.output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc["dry_run"] == false);
  CHECK(doc["table"] == "lead_project");
  CHECK(doc["destination"] == "default");
  CHECK(doc["leads_scanned"] == 40);
  CHECK(doc["totals"]["inserted"] == 0);
  CHECK(doc["totals"]["found"] == 105);
  CHECK(doc["totals"]["already_present"] == 104);
  CHECK(doc["totals"]["already_present_not_sent"] == 1);
  CHECK(doc["totals"]["unparseable"] == 1);
  REQUIRE(doc["ledgers"].size() == 3);
  CHECK(doc["ledgers"][0]["column"] == "capi_events_sent");
  CHECK(doc["ledgers"][0]["provider"] == "meta");
  REQUIRE(doc["ledgers"][0]["unparseable_samples"].size() == 1);
  CHECK(doc["ledgers"][0]["unparseable_samples"][0]["lead_id"] == 5);
  CHECK(doc["ledgers"][0]["unparseable_samples"][0]["event_name"] == "Contact");
  CHECK(doc["ledgers"][2]["column"] == "google_events_sent");
  CHECK(doc["ledgers"][2]["provider"] == "google_data_manager");
  CHECK(doc["ledgers"][2]["found"] == 4);
  CHECK(doc["ledgers"][2]["already_present"] == 4);
}

TEST_CASE("import-ledgers CLI: an account staying on the Google Ads API maps Google's ledger to google_ads") {
  scratch_database db;
  seed(db);
  // As docs/migrating_from_ledgers.md says: any --ledger replaces the defaults, so all three are given.
  const auto r = run_cli({"import-ledgers", "--ledger", "capi_events_sent=meta", "--ledger",
                          "tiktok_events_sent=tiktok", "--ledger", "google_events_sent=google_ads", "--json"},
                         env_for(db));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  REQUIRE(doc["ledgers"].size() == 3);
  CHECK(doc["ledgers"][2]["provider"] == "google_ads");
  CHECK(doc["ledgers"][2]["inserted"] == 4);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'google_ads' AND state = 'sent' "
                  "AND extract(epoch FROM sent_at) * 1000 = 1704448800123 + lead_project_id") == 4);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'google_data_manager'") == 0);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == 79 + 20 + 4);
}

TEST_CASE("import-ledgers CLI: custom mapping and destination") {
  scratch_database db;
  seed(db);
  const auto r = run_cli(
      {"import-ledgers", "--ledger", "tiktok_events_sent=webhook", "--destination", "crm_hook", "--json"}, env_for(db));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  REQUIRE(doc["ledgers"].size() == 1);
  CHECK(doc["ledgers"][0]["inserted"] == 20);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE provider = 'webhook' AND destination = 'crm_hook' "
                  "AND state = 'sent'") == 20);
  CHECK(db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'") == 20);
}

TEST_CASE("import-ledgers CLI: usage errors exit 2 and change nothing") {
  scratch_database db;
  seed(db);
  const auto env = env_for(db);
  const auto before = table(db);
  struct bad_case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<bad_case> cases = {
      {{"--table", "lead_project;DROP TABLE event_delivery"}, "invalid table name"},
      {{"--table", "a.b.c"}, "invalid table name"},
      {{"--id-column", "1id"}, "invalid id column"},
      {{"--ledger", "capi_events_sent"}, "--ledger wants COLUMN=PROVIDER"},
      {{"--ledger", "=meta"}, "--ledger wants COLUMN=PROVIDER"},
      {{"--ledger", "capi events=meta"}, "invalid ledger column"},
      {{"--ledger", "capi_events_sent=facebook"}, "unknown provider 'facebook'"},
      {{"--ledger", "capi_events_sent=meta", "--ledger", "capi_events_sent=tiktok"}, "given twice"},
      {{"--batch-size", "0"}, "--batch-size must be 1..100000"},
      {{"--batch-size", "12x"}, "--batch-size must be 1..100000"},
      {{"--destination"}, "unknown or incomplete option '--destination'"},
      {{"--frobnicate"}, "unknown or incomplete option '--frobnicate'"},
      {{"--table", "lead_projects"}, "no table or view named \"lead_projects\""},
      {{"--ledger", "snap_events_sent=meta"}, "has no column \"snap_events_sent\""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"import-ledgers"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_cli(args, env);
    CAPTURE(c.says);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.says));
  }
  CHECK(table(db) == before);

  const auto help = run_cli({"import-ledgers", "--help"}, env);
  CHECK(help.exit_code == 0);
  CHECK(contains(help.output, "usage: dispatcher import-ledgers"));
  CHECK(contains(help.output, "--ledger COLUMN=PROVIDER"));
}

TEST_CASE("import-ledgers CLI: a database failure exits 1") {
  const auto r = run_cli({"import-ledgers", "--dry-run"}, {{"DATABASE_URL", "dbname=outbox_no_such_database_ledgers"}});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "dispatcher import-ledgers: error:"));
}

TEST_CASE("import-ledgers is listed by dispatcher --help") {
  const auto r = run_cli({"--help"}, {});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "import-ledgers"));
}

}  // namespace import_ledgers_e2e

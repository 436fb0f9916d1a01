// The CRM side end to end: Django (examples/django/scenario.py, using the
// outbox_events app) enqueues events in its own transactions while a real
// `dispatcher run` delivers them to a local HTTPS server that speaks Meta's
// and TikTok's APIs and takes webhooks, and to the Google fake (Data Manager
// API). Every committed event arrives exactly once with its idempotency key;
// the default fan-out reaches Google through Data Manager, not the Ads API; a
// rolled-back transaction leaves no row and sends nothing; enqueueing an
// existing event returns false and changes nothing. And the CRM's own
// `manage.py test` (examples/django/manage.py): Django builds its test
// database from migrations, outbox_events' migration 0002 gives it the
// dispatcher's schema, and `dispatcher migrate` then agrees with it.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/connection.hpp"
#include "db/migrations.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_google.hpp"
#include "tests/support/fake_meta.hpp"
#include "tests/support/fake_tiktok.hpp"
#include "tests/support/python_process.hpp"

#ifndef OUTBOX_SOURCE_DIR
#error "OUTBOX_SOURCE_DIR must name the source tree"
#endif

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace django_e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::environment;
using outbox::test::admin_conninfo;
using outbox::test::conninfo_for;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::fake_google;
using outbox::test::fake_meta;
using outbox::test::fake_meta_options;
using outbox::test::fake_tiktok;
using outbox::test::fake_tiktok_options;
using outbox::test::python_interpreter;
using outbox::test::python_result;
using outbox::test::recorded_request;
using outbox::test::response_plan;
using outbox::test::run_python;
using outbox::test::sql_script;

namespace {

struct event_ref {
  long long lead;
  std::string provider;
  std::string event;
};

// What scenario.py --default-fanout commits: a fan-out for lead 1, two single
// events for lead 2, and lead 3 through enqueue_fanout's default providers.
const std::vector<std::string> fanout_providers{"meta", "tiktok", "webhook"};
// The default Google path is Data Manager: the Ads API refuses click-conversion
// uploads from integrations that were not allowlisted before 2026-06-15.
const std::vector<std::string> default_fanout{"meta", "tiktok", "google_data_manager"};
const std::vector<event_ref> committed_events{
    {1, "meta", "Lead"},     {1, "tiktok", "Lead"}, {1, "webhook", "Lead"}, {2, "webhook", "Purchase"},
    {2, "meta", "Purchase"}, {3, "meta", "Lead"},   {3, "tiktok", "Lead"},  {3, "google_data_manager", "Lead"},
};
constexpr long long rolled_back_lead = 666;

std::string scenario_script() { return OUTBOX_SOURCE_DIR "/examples/django/scenario.py"; }

// One HTTPS server for the three providers, routed by path: Meta's and
// TikTok's fakes check their requests the way the APIs do; /hook takes webhooks.
void route_providers(e2e_fixture& fx, const fake_meta& meta, const fake_tiktok& tiktok) {
  fx.server.set_fallback([meta_api = meta.make_responder(),
                          tiktok_api = tiktok.make_responder()](const recorded_request& r) -> response_plan {
    if (r.target.starts_with("/open_api/")) return tiktok_api(r);
    if (r.target.starts_with("/hook")) return response_plan::reply(200, R"({"ok":true})");
    return meta_api(r);
  });
}

environment provider_settings(const e2e_fixture& fx, const fake_google& google) {
  const fake_meta_options meta;
  const fake_tiktok_options tiktok;
  const std::string base = fx.server.url("", "localhost");
  return {
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__ACCOUNT_ID", "123-456-7890"},
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__CONVERSION_ACTION_ID", "987654"},
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__CLIENT_ID", std::string(fake_google::client_id)},
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__CLIENT_SECRET", std::string(fake_google::client_secret)},
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__REFRESH_TOKEN", std::string(fake_google::refresh_token)},
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__TOKEN_URL", google.token_url()},
      {"OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__BASE_URL", google.base_url()},
      {"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", meta.pixel_id},
      {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", meta.access_token},
      {"OUTBOX_DEST__META__DEFAULT__API_VERSION", meta.api_version},
      {"OUTBOX_DEST__META__DEFAULT__BASE_URL", base},
      {"OUTBOX_DEST__TIKTOK__DEFAULT__ACCESS_TOKEN", tiktok.access_token},
      {"OUTBOX_DEST__TIKTOK__DEFAULT__EVENT_SOURCE_ID", tiktok.event_source_id},
      {"OUTBOX_DEST__TIKTOK__DEFAULT__BASE_URL", base},
  };
}

// How many times each idempotency key reached a server: a webhook carries it
// in `webhook-id`, a Meta or TikTok request as data[].event_id, a Data Manager
// request as events[].transactionId.
std::map<std::string, int> keys_received(const std::vector<recorded_request>& requests, const fake_google& google) {
  std::map<std::string, int> keys;
  for (const auto& r : google.data_manager_requests()) {
    const auto body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.contains("events") || !body["events"].is_array()) {
      ++keys["(unreadable Data Manager request)"];
      continue;
    }
    for (const auto& e : body["events"]) ++keys[e.value("transactionId", std::string("(event without transactionId)"))];
  }
  for (const auto& r : requests) {
    if (r.target.starts_with("/hook")) {
      ++keys[r.header("webhook-id").value_or("(webhook without webhook-id)")];
      continue;
    }
    const auto body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.contains("data") || !body["data"].is_array()) {
      ++keys["(unreadable request to " + r.target + ")"];
      continue;
    }
    for (const auto& e : body["data"]) ++keys[e.value("event_id", std::string("(event without event_id)"))];
  }
  return keys;
}

std::string key_of(const e2e_fixture& fx, long long lead, const std::string& provider, const std::string& event) {
  return std::string(
      fx.db.query("SELECT outbox_idempotency_key($1, $2, $3)", {std::to_string(lead), provider, event}).text(0, 0));
}

// Fails the test with a clear message unless the interpreter imports Django and psycopg2.
void require_django() {
  python_result probe;
  try {
    probe = run_python({"-c", "import django, psycopg2; print(django.get_version())"}, {}, 60s);
  } catch (const std::exception& e) {
    FAIL("cannot run " << python_interpreter() << " (" << std::string(e.what())
                       << "); scripts/setup.sh installs python3, python3-django and python3-psycopg2");
  }
  if (probe.exit_code != 0) {
    FAIL(probe.command << " exited " << probe.exit_code << ": Django or psycopg2 is missing for "
                       << python_interpreter()
                       << "; scripts/setup.sh installs python3-django and python3-psycopg2 (set TEST_PYTHON3 "
                          "to use another interpreter)\n"
                       << probe.err);
  }
}

}  // namespace

TEST_CASE("Django: committed enqueues are delivered once each, a rolled-back one never, a duplicate returns false") {
  require_django();
  REQUIRE(std::filesystem::exists(scenario_script()));

  e2e_fixture fx;
  const fake_meta meta;
  const fake_tiktok tiktok;
  fake_google google(fx.pki.trusted);
  route_providers(fx, meta, tiktok);

  // As deployed: migrate (already done by the fixture; must be a no-op), then run.
  {
    const auto migrate = fx.cli({"migrate"});
    INFO(migrate.output);
    REQUIRE(migrate.exit_code == 0);
  }
  auto& dispatcher = fx.start_dispatcher(provider_settings(fx, google));
  REQUIRE(dispatcher.wait_for_log("listening for new rows", 15s));

  // The CRM's transactions, through Django, on the scratch database.
  std::string providers_arg;
  for (const auto& p : fanout_providers) providers_arg += (providers_arg.empty() ? "" : ",") + p;
  const environment django_env{{"PGDATABASE", fx.db.name()}, {"DJANGO_SETTINGS_MODULE", "testproject.settings"}};
  const auto run = run_python({scenario_script(), "--providers", providers_arg, "--default-fanout"}, django_env, 120s);
  INFO("command: " << run.command);
  INFO("stderr:\n" << run.err);
  INFO("stdout:\n" << run.out);
  REQUIRE(run.exit_code == 0);
  const auto summary = json::parse(run.out, nullptr, false);
  REQUIRE(summary.is_object());
  const auto field = [&](const char* name) { return summary.contains(name) ? summary[name] : json(); };

  json all_new = json::object();
  json all_existing = json::object();
  for (const auto& p : fanout_providers) {
    all_new[p] = true;
    all_existing[p] = false;
  }
  json lead_2 = json::object();
  lead_2["webhook"] = true;
  lead_2["meta"] = true;
  lead_2["webhook_repeated_in_transaction"] = false;  // same (lead, provider, event) earlier in the transaction
  CHECK(field("lead_1_fanout") == all_new);
  CHECK(field("lead_2") == lead_2);
  CHECK(field("lead_666_fanout_before_rollback") == all_new);  // inserted, then undone by the rollback
  CHECK(field("lead_666_rows_after_rollback") == 0);
  CHECK(field("duplicate_event") == false);  // already committed
  CHECK(field("duplicate_fanout") == all_existing);
  CHECK(field("lead_1_webhook_order_id") == "crm-lead-1");  // the duplicate did not overwrite the payload
  CHECK(field("model_read_only") == true);

  // enqueue_fanout without providers: meta, tiktok and Google through Data Manager.
  json default_pairs = json::array();
  json default_new = json::object();
  for (const auto& p : default_fanout) {
    default_pairs.push_back({p, "default"});
    default_new[p] = true;
  }
  CHECK(field("default_fanout_providers") == default_pairs);
  CHECK(field("lead_3_default_fanout") == default_new);

  // The keys the dispatcher must send, computed independently of the rows.
  std::map<std::string, std::string> expected;  // idempotency key -> "lead/provider/event"
  for (const auto& e : committed_events) {
    expected[key_of(fx, e.lead, e.provider, e.event)] = std::to_string(e.lead) + "/" + e.provider + "/" + e.event;
  }
  REQUIRE(expected.size() == committed_events.size());
  // The rows Django's model read back carry exactly these keys.
  std::map<std::string, std::string> read_by_django;
  for (const auto& row : field("rows")) {
    read_by_django[row.value("idempotency_key", "")] = std::to_string(row.value("lead_project_id", 0LL)) + "/" +
                                                       row.value("provider", "") + "/" + row.value("event_name", "");
  }
  CHECK(read_by_django == expected);

  const auto all_arrived = [&] {
    const auto got = keys_received(fx.server.requests(), google);
    return std::all_of(expected.begin(), expected.end(), [&](const auto& kv) { return got.contains(kv.first); });
  };
  REQUIRE(eventually(all_arrived, 30s));
  const auto total = static_cast<long long>(committed_events.size());
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == total; }, 15s));

  // Every committed key exactly once, and nothing else.
  const auto received = keys_received(fx.server.requests(), google);
  for (const auto& [key, what] : expected) {
    INFO(what << " key " << key);
    CHECK(received.contains(key));
    if (received.contains(key)) CHECK(received.at(key) == 1);
  }
  CHECK(received.size() == expected.size());
  CHECK(fx.count("true") == total);
  CHECK(fx.count("idempotency_key <> outbox_idempotency_key(lead_project_id, provider, event_name)") == 0);
  CHECK(fx.count("lead_project_id = 1 AND payload->>'order_id' = 'crm-lead-1'") == 3);
  CHECK(fx.count("lead_project_id = 2 AND payload->>'value' = '120.50'") == 2);  // DjangoJSONEncoder: Decimal
  CHECK(meta.accepted_event_ids().size() == 3);
  CHECK(tiktok.accepted_event_ids().size() == 2);
  // Google got lead 3 through Data Manager (events:ingest), with its click id, and
  // nothing through the Ads API, which refuses new integrations.
  const auto ingested = google.ingested_events();
  REQUIRE(ingested.size() == 1);
  CHECK(ingested[0].value("transactionId", "") == key_of(fx, 3, "google_data_manager", "Lead"));
  CHECK(ingested[0].value("adIdentifiers", json::object()).value("gclid", "") == "Cj0KCQiA-django-3");
  CHECK(google.ads_requests().empty());
  CHECK(fx.count("provider = 'google_data_manager' AND state = 'sent' AND lead_project_id = 3") == 1);

  // The rolled-back lead, checked once everything committed has arrived.
  CHECK(fx.count("lead_project_id = " + std::to_string(rolled_back_lead)) == 0);
  for (const auto& p : fanout_providers) {
    const auto key = key_of(fx, rolled_back_lead, p, "Lead");
    INFO("rolled-back " << p << " key " << key);
    CHECK_FALSE(received.contains(key));
  }
  for (const auto& r : fx.server.requests()) {
    CHECK(r.body.find("crm-lead-666") == std::string::npos);  // its order_id, sent unhashed by every provider
  }

  dispatcher.signal(SIGTERM);
  CHECK(dispatcher.wait_exit(15s) == 0);
}

namespace {

std::string manage_py() { return OUTBOX_SOURCE_DIR "/examples/django/manage.py"; }

// The tests examples/django must run (crm/tests.py, outbox_events/tests.py):
// one that silently stopped being discovered fails this test too.
const std::vector<std::string> django_tests{
    // The CRM's own, in TestCase transactions.
    "test_qualifying_a_lead_enqueues_one_row_per_default_provider",
    "test_qualifying_twice_enqueues_nothing_new_and_keeps_the_first_payload",
    "test_a_rolled_back_transaction_leaves_no_row",
    "test_no_on_commit_callback_is_needed",
    "test_a_purchase_goes_to_the_crm_hook_once",
    "test_first_test_starts_without_the_row",
    "test_second_test_starts_without_the_row",
    // outbox_events': schema, errors, the setting, the admin.
    "test_the_test_database_has_every_dispatcher_migration_recorded",
    "test_applying_again_changes_nothing",
    "test_a_changed_migration_is_refused",
    "test_a_missing_schema_says_run_dispatcher_migrate",
    // forget_lead: inside the CRM's transaction.
    "test_forget_lead_erases_closes_and_audits_inside_the_crm_transaction",
    "test_a_dry_run_changes_nothing",
    "test_providers_as_a_string_is_refused",
    "test_one_fanout_with_two_destinations_of_a_provider_is_refused",
    "test_a_second_destination_of_the_same_provider_raises",
    "test_a_fanout_over_a_row_of_another_destination_raises",
    "test_a_lead_id_past_bigint_is_out_of_range_not_a_missing_schema",
    "test_bad_names_are_refused_before_the_database",
    "test_the_model_is_read_only",
    "test_the_setting_names_the_default_fanout",
    "test_without_the_setting_meta_tiktok_and_google_data_manager",
    "test_a_wrong_setting_is_reported",
    "test_the_list_and_the_detail_page_show_the_row_and_its_attempts",
    "test_a_superuser_sees_personal_data_when_asked_and_that_is_recorded",
    "test_nothing_can_be_added_changed_or_deleted",
    "test_a_search_that_is_no_lead_id_is_never_a_server_error",
    // set_destination: sealing and checks.
    "test_set_destination_seals_its_secret_and_keeps_what_a_change_does_not_name",
    "test_set_destination_refuses_a_secret_in_clear_an_unknown_key_and_a_missing_key",
    // registry_fanout, the registry's model and its admin pages (secrets write-only).
    "test_registry_fanout_enqueues_for_the_projects_enabled_destinations_only",
    "test_the_destination_model_is_keyed_by_provider_and_name_and_read_only",
    "test_the_destination_pages_never_show_a_secret_plain_or_sealed",
    "test_a_blank_secret_keeps_the_stored_one_and_a_new_one_is_sealed_for_the_key",
    "test_the_history_names_secret_keys_never_their_values",
    "test_adding_a_destination_seals_its_secret_and_records_who",
    "test_an_invalid_setting_or_name_is_a_form_error",
    "test_delete_is_refused_while_a_row_is_pending",
};

// Test name -> outcome, from unittest's `-v 2` lines "test_x (module.Class.test_x) ... ok".
std::map<std::string, std::string> django_outcomes(const std::string& err) {
  static const std::regex line(R"(^(test_\w+) \([^)]*\) \.\.\. (\w+))");
  std::map<std::string, std::string> outcomes;
  std::istringstream in(err);
  for (std::string text; std::getline(in, text);) {
    if (std::smatch m; std::regex_search(text, m, line)) outcomes[m[1]] = m[2];
  }
  return outcomes;
}

// Django keeps its test database (--keepdb) for `dispatcher migrate` to look at; dropped here.
class drop_database_at_exit {
 public:
  explicit drop_database_at_exit(std::string name) : name_(std::move(name)) {}
  drop_database_at_exit(const drop_database_at_exit&) = delete;
  drop_database_at_exit& operator=(const drop_database_at_exit&) = delete;
  ~drop_database_at_exit() {
    try {
      sql_script(admin_conninfo(), "DROP DATABASE IF EXISTS " + outbox::db::quote_identifier(name_) + " WITH (FORCE)");
    } catch (...) {
      // Only leaves a database behind in a throwaway cluster.
    }
  }

 private:
  std::string name_;
};

std::string recorded_migrations(const std::string& conninfo) {
  const auto r =
      outbox::test::sql(conninfo,
                        "SELECT string_agg(name || ' ' || checksum || ' ' || applied_at, E'\\n' ORDER BY name) "
                        "FROM outbox_schema_migrations");
  return std::string(r.text(0, 0));
}

}  // namespace

TEST_CASE("Django: the CRM's own manage.py test has the dispatcher's schema, and dispatcher migrate agrees") {
  require_django();
  REQUIRE(std::filesystem::exists(manage_py()));
  e2e_fixture fx;  // its database was migrated by the dispatcher's code: the production order
  const std::string test_db = "test_" + fx.db.name();  // Django's name for the test database
  const drop_database_at_exit cleanup{test_db};
  const environment django_env{{"PGDATABASE", fx.db.name()}, {"DJANGO_SETTINGS_MODULE", "testproject.settings"}};
  const auto all = outbox::db::embedded_migrations().size();
  const std::string agreed = "schema up to date: 0 applied now, " + std::to_string(all) + " already applied";

  // The CRM developer's command: Django creates test_<db> from migrations and runs the tests.
  const auto run =
      run_python({manage_py(), "test", "crm", "outbox_events", "--noinput", "--keepdb", "-v", "2"}, django_env, 300s);
  INFO("command: " << run.command);
  INFO("output:\n" << run.err << run.out);
  CHECK(run.exit_code == 0);
  const auto outcomes = django_outcomes(run.err);
  for (const auto& name : django_tests) {
    INFO("Django test " << name);
    CHECK(outcomes.contains(name));
    if (outcomes.contains(name)) CHECK(outcomes.at(name) == "ok");
  }
  CHECK(outcomes.size() == django_tests.size());

  // The database Django built is one `dispatcher migrate` finds up to date:
  // every migration recorded, with the checksums the dispatcher computes.
  const environment on_test_db{{"DATABASE_URL", conninfo_for(test_db)}};
  const auto status = fx.cli({"migrate", "--status"}, on_test_db);
  INFO("migrate --status:\n" << status.output);
  CHECK(status.exit_code == 0);
  CHECK(status.output.find("applied  0001_") != std::string::npos);
  CHECK_FALSE(status.output.starts_with("pending "));  // one line per migration: "applied  ..." or "pending  ..."
  CHECK(status.output.find("\npending ") == std::string::npos);
  const auto migrate = fx.cli({"migrate"}, on_test_db);
  INFO("migrate:\n" << migrate.output);
  CHECK(migrate.exit_code == 0);
  CHECK(migrate.output.find(agreed) != std::string::npos);

  // The other order: `dispatcher migrate` first (the fixture), then Django's
  // `migrate`, which applies nothing and leaves the records as they were.
  const auto before = recorded_migrations(fx.db.conninfo());
  const auto django_migrate = run_python({manage_py(), "migrate", "--noinput"}, django_env, 120s);
  INFO("manage.py migrate:\n" << django_migrate.err << django_migrate.out);
  CHECK(django_migrate.exit_code == 0);
  CHECK(django_migrate.out.find("Applying outbox_events.0002_dispatcher_schema... OK") != std::string::npos);
  CHECK(recorded_migrations(fx.db.conninfo()) == before);
  CHECK(fx.cli({"migrate"}).output.find(agreed) != std::string::npos);
}

}  // namespace django_e2e

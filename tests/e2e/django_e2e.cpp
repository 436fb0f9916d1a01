// The CRM side end to end: Django (examples/django/scenario.py, using the
// outbox_events app) enqueues events in its own transactions while a real
// `dispatcher run` delivers them to a local HTTPS server that speaks Meta's
// and TikTok's APIs and takes webhooks, and to the Google fake (Data Manager
// API). Every committed event arrives exactly once with its idempotency key;
// the default fan-out reaches Google through Data Manager, not the Ads API; a
// rolled-back transaction leaves no row and sends nothing; enqueueing an
// existing event returns false and changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_google.hpp"
#include "tests/support/fake_meta.hpp"
#include "tests/support/fake_tiktok.hpp"
#include "tests/support/python_process.hpp"

#ifndef OUTBOX_SOURCE_DIR
#error "OUTBOX_SOURCE_DIR must name the source tree"
#endif

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::environment;
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
    {1, "meta", "Lead"}, {1, "tiktok", "Lead"}, {1, "webhook", "Lead"},
    {2, "webhook", "Purchase"}, {2, "meta", "Purchase"},
    {3, "meta", "Lead"}, {3, "tiktok", "Lead"}, {3, "google_data_manager", "Lead"},
};
constexpr long long rolled_back_lead = 666;

std::string scenario_script() { return OUTBOX_SOURCE_DIR "/examples/django/scenario.py"; }

// One HTTPS server for the three providers, routed by path: Meta's and
// TikTok's fakes check their requests the way the APIs do; /hook takes webhooks.
void route_providers(e2e_fixture& fx, const fake_meta& meta, const fake_tiktok& tiktok) {
  fx.server.set_fallback([meta_api = meta.make_responder(), tiktok_api = tiktok.make_responder()](
                             const recorded_request& r) -> response_plan {
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
    expected[key_of(fx, e.lead, e.provider, e.event)] =
        std::to_string(e.lead) + "/" + e.provider + "/" + e.event;
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

// The engine in this process against a real PostgreSQL and the fake Google
// endpoints over HTTPS (tests/support/fake_google): per-row outcomes of a mixed
// Google Ads batch, OAuth tokens expiring and refused mid-run, invalid_grant
// pausing the destination, and the Data Manager API with and without validateOnly.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_google.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_pgtest {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::engine_harness;
using outbox::test::fake_google;
using outbox::test::fake_google_options;

namespace {

constexpr const char* conversion_action = "customers/1234567890/conversionActions/987654";

void google_ads_env(outbox::environment& env, const fake_google& g, const outbox::test::test_ca& ca,
                    const std::string& name = "DEFAULT") {
  env["OUTBOX_EXTRA_CA_FILE"] = ca.cert_pem_file().string();
  for (auto& [k, v] : g.destination_settings("GOOGLE_ADS", name)) env[k] = v;
}

void data_manager_env(outbox::environment& env, const fake_google& g, const outbox::test::test_ca& ca,
                      const std::string& name) {
  env["OUTBOX_EXTRA_CA_FILE"] = ca.cert_pem_file().string();
  for (auto& [k, v] : g.destination_settings("GOOGLE_DATA_MANAGER", name)) env[k] = v;
}

std::string key_for(const engine_harness& h, std::int64_t lead, const std::string& provider, const std::string& event) {
  auto r = h.db.query("SELECT outbox_idempotency_key($1, $2, $3)", {std::to_string(lead), provider, event});
  return std::string(r.text(0, 0));
}

std::string payload(json fields) {
  fields["event_time"] = "2026-09-20T14:03:00Z";
  return fields.dump();
}

}  // namespace

TEST_CASE("google_ads: a mixed batch gets one outcome per row from partialFailureError") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  google.fail_gclid("G-unknown", "EVENT_NOT_FOUND", "The imported event could not be attributed to a click.");
  google.fail_gclid("G-recent", "TOO_RECENT_EVENT", "The click occurred less than 6 hours ago.");
  engine_harness h([&](auto& env) { google_ads_env(env, google, ca); });
  google.mark_order_id_used(conversion_action, key_for(h, 105, "google_ads", "Purchase"));

  // Enqueued before the engine starts, so one claim takes them all: one request.
  const auto good = h.enqueue(101, "Purchase",
                              payload({{"gclid", "G-good-1"},
                                       {"value", 10.5},
                                       {"currency", "EUR"},
                                       {"email", "Cloudy.SanFrancisco+crm@gmail.com"}}),
                              "google_ads");
  const auto good_braid = h.enqueue(102, "Purchase", payload({{"wbraid", "W-good-2"}}), "google_ads");
  const auto unparseable = h.enqueue(103, "Purchase", payload({{"gclid", "not a gclid!"}}), "google_ads");
  const auto unknown = h.enqueue(104, "Purchase", payload({{"gclid", "G-unknown"}}), "google_ads");
  const auto already = h.enqueue(105, "Purchase", payload({{"gclid", "G-again"}}), "google_ads");
  const auto recent = h.enqueue(106, "Purchase", payload({{"gclid", "G-recent"}}), "google_ads");
  const auto no_ids = h.enqueue(107, "Purchase", payload({{"value", 3}}), "google_ads");
  h.start();

  CHECK(h.wait_state(good, "sent"));
  CHECK(h.wait_state(good_braid, "sent"));
  CHECK(h.wait_state(already, "sent"));
  CHECK(h.wait_state(unparseable, "dead"));
  CHECK(h.wait_state(unknown, "dead"));
  CHECK(h.wait_state(no_ids, "dead"));
  REQUIRE(h.wait_for([&] { return h.column_of(recent, "last_error") != ""; }, 10s));

  const auto requests = google.ads_requests();
  REQUIRE(requests.size() == 1);
  const auto body = json::parse(requests.front().body);
  CHECK(body["partialFailure"] == true);
  CHECK_FALSE(body.contains("validateOnly"));
  CHECK(body["conversions"].size() == 6);  // the row without identifiers never left
  CHECK(requests.front().target == "/v26/customers/1234567890:uploadClickConversions");
  CHECK(requests.front().header("authorization").value_or("").starts_with("Bearer ya29.fake-"));
  CHECK_FALSE(requests.front().header("developer-token").has_value());

  // Good rows reached Google with their idempotency key as orderId.
  const auto uploaded = google.uploaded_conversions();
  REQUIRE(uploaded.size() == 2);
  CHECK(uploaded[0]["orderId"] == h.column_of(good, "idempotency_key"));
  CHECK(uploaded[0]["conversionAction"] == conversion_action);
  CHECK(uploaded[0]["conversionDateTime"] == "2026-09-20 14:03:00+00:00");
  CHECK(uploaded[0]["userIdentifiers"][0]["hashedEmail"].get<std::string>().size() == 64);
  CHECK(uploaded[1]["wbraid"] == "W-good-2");

  // Bad rows are dead with Google's own words; the already-uploaded one is delivered.
  CHECK(h.column_of(unparseable, "last_error") ==
        "Google Ads: UNPARSEABLE_GCLID: The imported gclid could not be decoded.");
  CHECK(h.column_of(unknown, "last_error") ==
        "Google Ads: EVENT_NOT_FOUND: The imported event could not be attributed to a click.");
  CHECK(h.column_of(no_ids, "last_error").starts_with("gclid:"));
  CHECK(h.column_of(already, "last_error") == "");
  for (const auto id : {good, good_braid, unparseable, unknown, already, recent}) CHECK(h.attempts_of(id) == 1);
  CHECK(h.column_of(good, "last_http_status") == "200");

  // TOO_RECENT_EVENT: retried in 6 hours, as Google asks.
  CHECK(h.state_of(recent) == "pending");
  CHECK(h.column_of(recent, "last_error").find("TOO_RECENT_EVENT") != std::string::npos);
  CHECK(h.db.scalar(
            "SELECT count(*) FROM event_delivery WHERE id = $1 AND next_attempt_at > now() + interval '5 hours 50 "
            "minutes'",
            {std::to_string(recent)}) == 1);
  CHECK(google.refreshes() == 1);
  h.stop();
}

TEST_CASE("google_ads: short-lived tokens are refreshed one at a time, and a refused token is replaced") {
  outbox::test::test_ca ca;
  fake_google_options opts;
  // The token source refreshes these after about 2 s. Long enough that the wave after the
  // revocation below (under ASan on a slow VM a wave can take a second) still uses the
  // revoked token instead of refreshing on schedule first.
  opts.token_lifetime = 4s;
  opts.token_delay = 150ms;  // wide enough for concurrent requests to pile up behind a refresh
  fake_google google(ca, opts);
  engine_harness h([&](auto& env) {
    google_ads_env(env, google, ca);
    env["OUTBOX_DEST__GOOGLE_ADS__DEFAULT__BATCH_SIZE"] = "1";  // one request per row: many at once
    env["OUTBOX_DEST__GOOGLE_ADS__DEFAULT__CONCURRENCY"] = "8";
  });
  h.start();

  std::vector<std::int64_t> rows;
  std::int64_t lead = 200;
  const auto wave = [&] {
    for (int i = 0; i < 6; ++i) {
      ++lead;
      rows.push_back(h.enqueue(lead, "Lead", payload({{"gclid", "G-" + std::to_string(lead)}}), "google_ads"));
    }
    for (const auto id : rows) REQUIRE(h.wait_state(id, "sent"));
  };
  wave();
  std::this_thread::sleep_for(2300ms);  // past the half-life: the next wave needs a fresh token
  wave();
  std::this_thread::sleep_for(2300ms);
  wave();
  const int before_revocation = google.refreshes();
  CHECK(before_revocation >= 3);

  // Google refuses the current token early (revoked): 401, refresh once, resend.
  google.expire_access_tokens();
  wave();
  CHECK(google.unauthorized_answers() >= 1);
  CHECK(google.refreshes() > before_revocation);
  CHECK(h.logs().find("access token refused; refreshing it and resending once") != std::string::npos);

  CHECK(google.max_concurrent_refreshes() == 1);
  CHECK(google.uploaded_conversions().size() == rows.size());
  for (const auto id : rows) CHECK(h.attempts_of(id) == 1);
  // No request ever carried an expired token except those Google was told to refuse.
  CHECK(google.unauthorized_answers() <= 8);
  h.stop();
}

TEST_CASE("google_ads: invalid_grant pauses the destination without burning attempts") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  google.revoke_refresh_token();
  engine_harness h([&](auto& env) { google_ads_env(env, google, ca); });
  h.start();
  const auto id = h.enqueue(301, "Purchase", payload({{"gclid", "G-301"}}), "google_ads");
  REQUIRE(h.wait_for([&] { return h.column_of(id, "last_error").find("invalid_grant") != std::string::npos; }, 10s));
  CHECK(h.state_of(id) == "pending");
  CHECK(h.attempts_of(id) == 0);
  CHECK(h.column_of(id, "last_error").find(fake_google::refresh_token) == std::string::npos);
  CHECK(h.logs().find("destination paused") != std::string::npos);
  CHECK(google.ads_requests().empty());
  CHECK(google.refreshes() == 1);

  // Further rows wait for the pause without a token request or an upload.
  const auto skipped = h.skipped_claims();
  const auto second = h.enqueue(302, "Purchase", payload({{"gclid", "G-302"}}), "google_ads");
  REQUIRE(h.claims_skipped_paused_since(skipped));
  CHECK(h.attempts_of(second) == 0);
  CHECK(google.refreshes() == 1);
  CHECK(google.ads_requests().empty());
  h.stop();
}

TEST_CASE("google_ads: CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE pauses and points at google_data_manager") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  google.refuse_ads_uploads_not_allowlisted();
  engine_harness h([&](auto& env) { google_ads_env(env, google, ca); });
  h.start();
  const auto id = h.enqueue(401, "Purchase", payload({{"gclid", "G-401"}}), "google_ads");
  REQUIRE(h.wait_for([&] { return h.column_of(id, "last_error") != ""; }, 10s));
  const auto error = h.column_of(id, "last_error");
  CHECK(error.find("CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE") != std::string::npos);
  CHECK(error.find("google_data_manager") != std::string::npos);
  CHECK(h.state_of(id) == "pending");
  CHECK(h.attempts_of(id) == 0);
  h.stop();
}

TEST_CASE("google_data_manager: events ingested, and validateOnly in the body when configured") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  engine_harness h([&](auto& env) {
    data_manager_env(env, google, ca, "DEFAULT");
    data_manager_env(env, google, ca, "CHECK");
    env["OUTBOX_DEST__GOOGLE_DATA_MANAGER__CHECK__VALIDATE_ONLY"] = "true";
    env["OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__LOGIN_ACCOUNT_ID"] = "111-222-3333";
  });
  const auto a = h.enqueue(501, "Purchase",
                           payload({{"gclid", "G-501"},
                                    {"value", 42},
                                    {"currency", "USD"},
                                    {"phone", "+1 (213) 373-4253"},
                                    {"consent", {{"ad_user_data", "GRANTED"}, {"ad_personalization", "GRANTED"}}}}),
                           "google_data_manager");
  const auto b = h.enqueue(502, "Purchase", payload({{"email", "lead@example.com"}}), "google_data_manager");
  const auto checked = h.enqueue(503, "Purchase", payload({{"gclid", "G-503"}}), "google_data_manager", "check");
  h.start();
  CHECK(h.wait_state(a, "sent"));
  CHECK(h.wait_state(b, "sent"));
  CHECK(h.wait_state(checked, "sent"));

  const auto requests = google.data_manager_requests();
  REQUIRE(requests.size() == 2);  // one per destination
  const auto real = std::find_if(requests.begin(), requests.end(),
                                 [](const auto& r) { return !json::parse(r.body).contains("validateOnly"); });
  const auto test = std::find_if(requests.begin(), requests.end(),
                                 [](const auto& r) { return json::parse(r.body).contains("validateOnly"); });
  REQUIRE(real != requests.end());
  REQUIRE(test != requests.end());
  CHECK(json::parse(test->body)["validateOnly"] == true);
  CHECK(real->target == "/v1/events:ingest");
  CHECK(real->header("authorization").value_or("").starts_with("Bearer "));
  CHECK_FALSE(real->header("developer-token").has_value());
  CHECK_FALSE(real->header("login-customer-id").has_value());
  const auto body = json::parse(real->body);
  CHECK(body["encoding"] == "HEX");
  CHECK(body["destinations"][0]["operatingAccount"] ==
        json{{"accountType", "GOOGLE_ADS"}, {"accountId", "1234567890"}});
  CHECK(body["destinations"][0]["loginAccount"]["accountId"] == "1112223333");
  CHECK(body["destinations"][0]["productDestinationId"] == "987654");
  REQUIRE(body["events"].size() == 2);

  // Only the real destination's events were ingested; validateOnly changes nothing.
  const auto ingested = google.ingested_events();
  REQUIRE(ingested.size() == 2);
  const auto by_key = [&](const std::string& key) {
    return *std::find_if(ingested.begin(), ingested.end(), [&](const json& e) { return e["transactionId"] == key; });
  };
  const auto first = by_key(h.column_of(a, "idempotency_key"));
  CHECK(first["eventTimestamp"] == "2026-09-20T14:03:00Z");
  CHECK(first["adIdentifiers"]["gclid"] == "G-501");
  CHECK(first["conversionValue"] == 42);
  CHECK(first["currency"] == "USD");
  CHECK(first["userData"]["userIdentifiers"][0]["phoneNumber"] ==
        "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
  CHECK(first["consent"] == json{{"adUserData", "CONSENT_GRANTED"}, {"adPersonalization", "CONSENT_GRANTED"}});
  const auto second = by_key(h.column_of(b, "idempotency_key"));
  CHECK_FALSE(second.contains("adIdentifiers"));
  CHECK(second["userData"]["userIdentifiers"][0].contains("emailAddress"));
  // The attempt log keeps Google's requestId for requestStatus:retrieve.
  auto log =
      h.db.query("SELECT response_excerpt FROM event_delivery_attempt WHERE delivery_id = $1", {std::to_string(a)});
  REQUIRE(log.rows() == 1);
  CHECK(std::string(log.text(0, 0)).find("requestId") != std::string::npos);
  h.stop();
}

TEST_CASE("google_data_manager: a refused batch is split, the culprit dies with Google's reason") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  engine_harness h([&](auto& env) { data_manager_env(env, google, ca, "DEFAULT"); });
  const auto ok1 = h.enqueue(601, "Purchase", payload({{"gclid", "G-601"}}), "google_data_manager");
  const auto bad = h.enqueue(602, "Purchase", payload({{"gclid", "not a gclid!"}}), "google_data_manager");
  const auto ok2 = h.enqueue(603, "Purchase", payload({{"gclid", "G-603"}}), "google_data_manager");
  h.start();
  CHECK(h.wait_state(ok1, "sent"));
  CHECK(h.wait_state(ok2, "sent"));
  CHECK(h.wait_state(bad, "dead"));
  CHECK(h.column_of(bad, "last_error").find("INVALID_FORMAT") != std::string::npos);
  CHECK(h.column_of(bad, "last_error").find("ad_identifiers.gclid") != std::string::npos);
  // The field violation named the culprit: it died at once, the others went out together in one more request.
  const auto requests = google.data_manager_requests();
  REQUIRE(requests.size() == 2);
  CHECK(json::parse(requests[0].body)["events"].size() == 3);
  CHECK(json::parse(requests[1].body)["events"].size() == 2);
  for (const auto id : {ok1, ok2, bad}) CHECK(h.attempts_of(id) == 1);
  CHECK(google.ingested_events().size() == 2);
  h.stop();
}

TEST_CASE("google_data_manager: a refusal that names no event halves the batch until the culprit is alone") {
  outbox::test::test_ca ca;
  fake_google_options opts;
  opts.unlocated_refusal_gclid = "G-POISON";
  fake_google google(ca, opts);
  engine_harness h([&](auto& env) { data_manager_env(env, google, ca, "DEFAULT"); });
  std::vector<std::int64_t> good;
  for (const std::int64_t lead : {611, 612, 613}) {
    good.push_back(
        h.enqueue(lead, "Purchase", payload({{"gclid", "G-" + std::to_string(lead)}}), "google_data_manager"));
  }
  const auto bad = h.enqueue(614, "Purchase", payload({{"gclid", "G-POISON"}}), "google_data_manager");
  h.start();
  for (const auto id : good) CHECK(h.wait_state(id, "sent"));
  CHECK(h.wait_state(bad, "dead"));
  CHECK(h.column_of(bad, "last_error").find("Request contains an invalid argument") != std::string::npos);
  // 4 refused; halves of 2: one accepted, one refused; halves of 1: one accepted, the poison dead alone.
  std::vector<std::size_t> sizes;
  for (const auto& r : google.data_manager_requests()) sizes.push_back(json::parse(r.body)["events"].size());
  std::sort(sizes.begin(), sizes.end());
  CHECK(sizes == std::vector<std::size_t>{1, 1, 2, 2, 4});
  for (const auto id : good) CHECK(h.attempts_of(id) == 1);  // resent at once, no attempt counted
  CHECK(h.attempts_of(bad) == 1);
  CHECK(google.ingested_events().size() == 3);
  h.stop();
}

TEST_CASE("google_data_manager: a fieldWarning in the 200 leaves the row sent, the warning in its attempts log") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  engine_harness h([&](auto& env) { data_manager_env(env, google, ca, "DEFAULT"); });
  const auto warned = h.enqueue(
      701, "Purchase",
      payload(
          {{"gclid", "G-701"}, {"first_name", "Mary"}, {"last_name", "Smith"}, {"country", "GB"}, {"zip", "SW1A#1AA"}}),
      "google_data_manager");
  const auto clean = h.enqueue(702, "Purchase", payload({{"gclid", "G-702"}}), "google_data_manager");
  h.start();
  CHECK(h.wait_state(warned, "sent"));
  CHECK(h.wait_state(clean, "sent"));
  REQUIRE(google.data_manager_requests().size() == 1);  // one request, accepted
  const auto dropped = [&](std::int64_t id) {
    auto r = h.db.query(
        "SELECT coalesce(array_to_string(dropped_fields, '|'), '') FROM event_delivery_attempt "
        "WHERE delivery_id = $1",
        {std::to_string(id)});
    REQUIRE(r.rows() == 1);
    return std::string(r.text(0, 0));
  };
  CHECK(dropped(warned) ==
        "provider warning: user_data.user_identifiers.address.postal_code: INVALID_FORMAT (Format is invalid; the "
        "field was ignored.)");
  CHECK(dropped(clean).empty());  // the warning named the other event only
  CHECK(h.logs().find("the provider accepted a conversion without some fields") != std::string::npos);
  h.stop();
  const auto text = h.metrics_text();
  CHECK(text.find("outbox_field_warnings_total{provider=\"google_data_manager\",destination=\"default\",field=\"user_"
                  "data.user_identifiers.address.postal_code\",reason=\"INVALID_FORMAT\"} 1") != std::string::npos);
}

}  // namespace google_pgtest

// The google_data_manager provider without a network: settings, the
// events:ingest body (golden JSON), and the fast-fail error model turned into
// one outcome per row.
#include "providers/google_data_manager_provider.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

using namespace outbox::providers;
using namespace std::chrono_literals;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

std::map<std::string, std::string> good_settings() {
  return {{"account_id", "123-456-7890"},
          {"conversion_action_id", "987654"},
          {"client_id", "cid.apps.googleusercontent.com"},
          {"client_secret", "s3cr3t-value"},
          {"refresh_token", "1//refresh-value"}};
}

outbound_event event(std::string key, json payload, std::int64_t row = 1) {
  outbound_event e;
  e.row_id = row;
  e.idempotency_key = std::move(key);
  e.event_name = "Purchase";
  e.lead_project_id = row;
  e.payload = std::move(payload);
  return e;
}

json full_payload() {
  return json{{"event_time", "2026-09-20T14:03:00Z"},
              {"value", 123.45},
              {"currency", "USD"},
              {"email", "cloudy.sanfrancisco+shopping@gmail.com"},
              {"phone", "+1 213-373-4253"},
              {"gclid", "Cj0KCQjw-abc_123"},
              {"consent", {{"ad_user_data", "GRANTED"}, {"ad_personalization", "DENIED"}}}};
}

http_result reply(int status, std::string body, header_list headers = {}) {
  http_result r;
  r.response = http_response{status, std::move(headers), std::move(body)};
  return r;
}

std::string dm_error(int code, std::string status, std::string reason, std::string field = {},
                     std::string description = "Format is invalid.") {
  json details = json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                               {"reason", reason},
                               {"domain", "datamanager.googleapis.com"}}});
  if (!field.empty()) {
    details.push_back({{"@type", "type.googleapis.com/google.rpc.BadRequest"},
                       {"fieldViolations", json::array({{{"field", field}, {"description", description}}})}});
  }
  return json{{"error", {{"code", code}, {"status", status}, {"message", description}, {"details", details}}}}.dump();
}

std::vector<std::optional<std::size_t>> sequential(std::size_t n) {
  std::vector<std::optional<std::size_t>> rows;
  for (std::size_t i = 0; i < n; ++i) rows.emplace_back(i);
  return rows;
}

}  // namespace

TEST_CASE("google_data_manager settings") {
  CHECK(validate_google_data_manager_settings(good_settings()).empty());
  const auto d = make_google_data_manager_destination(good_settings(), {});
  CHECK(d.account_id == "1234567890");
  CHECK(d.conversion_action_id == "987654");
  CHECK(d.base_url == "https://datamanager.googleapis.com");
  CHECK(d.url() == "https://datamanager.googleapis.com/v1/events:ingest");
  CHECK(d.batch_size == 1000);
  CHECK(d.oauth.token_url == "https://oauth2.googleapis.com/token");

  struct row {
    const char* key;
    const char* value;
  };
  const std::vector<row> table{{"account_id", nullptr},      {"account_id", "12-34"},
                               {"conversion_action_id", nullptr}, {"conversion_action_id", "x1"},
                               {"login_account_id", "5"},    {"client_secret", nullptr},
                               {"refresh_token", nullptr},   {"base_url", "datamanager.googleapis.com"},
                               {"batch_size", "2001"},       {"validate_only", "perhaps"},
                               {"token_url", "mailto:x"}};
  for (const auto& r : table) {
    CAPTURE(r.key);
    auto s = good_settings();
    if (r.value) {
      s[r.key] = r.value;
    } else {
      s.erase(r.key);
    }
    const auto problems = validate_google_data_manager_settings(s);
    REQUIRE(problems.size() == 1);
    CHECK(problems.front().first == r.key);
    CHECK(problems.front().second.find("s3cr3t-value") == std::string::npos);
  }
}

TEST_CASE("google_data_manager request: golden body") {
  const google_data_manager_provider p{make_google_data_manager_destination(good_settings(), {})};
  const std::vector events{event("key-1", full_payload())};
  REQUIRE_FALSE(p.validate(events[0], system_clock::now()).has_value());
  const auto req = p.build_request(events, system_clock::now());
  CHECK(req.method == "POST");
  CHECK(req.url == "https://datamanager.googleapis.com/v1/events:ingest");
  CHECK(req.body ==
        R"({"destinations":[{"operatingAccount":{"accountId":"1234567890","accountType":"GOOGLE_ADS"},)"
        R"("productDestinationId":"987654"}],"encoding":"HEX","events":[{"adIdentifiers":{"gclid":"Cj0KCQjw-abc_123"},)"
        R"("consent":{"adPersonalization":"CONSENT_DENIED","adUserData":"CONSENT_GRANTED"},"conversionValue":123.45,)"
        R"("currency":"USD","eventTimestamp":"2026-09-20T14:03:00Z","transactionId":"key-1","userData":)"
        R"({"userIdentifiers":[{"emailAddress":"223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4"},)"
        R"({"phoneNumber":"9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd"}]}}]})");
  CHECK(req.headers == header_list{{"content-type", "application/json"}});
  CHECK(p.kind() == "google_data_manager");
  REQUIRE(p.oauth() != nullptr);
  CHECK(p.oauth()->refresh_token == "1//refresh-value");
}

TEST_CASE("google_data_manager request: validateOnly, loginAccount, offsets, extra, dedup") {
  auto s = good_settings();
  s["validate_only"] = "true";
  s["login_account_id"] = "111-222-3333";
  s["base_url"] = "https://localhost:9443";
  const google_data_manager_provider p{make_google_data_manager_destination(s, {{"x-trace", "1"}})};
  auto payload = full_payload();
  payload["event_time"] = "2026-09-20T16:03:00.750+02:00";
  payload["extra"] = {{"google_data_manager", {{"eventSource", "PHONE"}, {"transactionId", "nope"}, {"currency", nullptr}}}};
  const std::vector events{event("k1", payload, 1), event("k2", json{{"event_time", 1}, {"wbraid", "W"}}, 2),
                           event("k1", json{{"event_time", 2}, {"gbraid", "B"}}, 3)};
  const auto req = p.build_request(events, system_clock::now());
  CHECK(req.url == "https://localhost:9443/v1/events:ingest");
  const auto body = json::parse(req.body);
  CHECK(body["validateOnly"] == true);
  CHECK(body["destinations"][0]["loginAccount"] == json{{"accountType", "GOOGLE_ADS"}, {"accountId", "1112223333"}});
  REQUIRE(body["events"].size() == 2);  // the second k1 is held back
  CHECK(body["events"][0]["eventTimestamp"] == "2026-09-20T14:03:00Z");
  CHECK(body["events"][0]["eventSource"] == "PHONE");
  CHECK(body["events"][0]["transactionId"] == "k1");
  CHECK_FALSE(body["events"][0].contains("currency"));
  CHECK(body["events"][1]["adIdentifiers"] == json{{"wbraid", "W"}});
  CHECK_FALSE(body["events"][1].contains("userData"));
  CHECK_FALSE(body["events"][1].contains("consent"));
  CHECK(req.headers == header_list{{"content-type", "application/json"}, {"x-trace", "1"}});

  const auto v = p.classify(events, reply(200, R"({"requestId":"abc"})"));
  CHECK(v.events[0].kind == outcome_kind::delivered);
  CHECK(v.events[1].kind == outcome_kind::delivered);
  CHECK(v.events[2].resend_alone);
  CHECK(v.events[2].kind == outcome_kind::retry);
}

TEST_CASE("google_data_manager validate") {
  const google_data_manager_provider p{make_google_data_manager_destination(good_settings(), {})};
  const auto problem = [&](json payload) {
    return p.validate(event("k", std::move(payload)), system_clock::now()).value_or("");
  };
  CHECK(problem(json{{"event_time", 1}, {"gclid", "G"}}).empty());
  CHECK(problem(json{{"event_time", 1}, {"email", "a@b.example"}}).empty());
  CHECK(problem(json{{"event_time", 1}}).starts_with("gclid:"));
  CHECK(problem(json{{"gclid", "G"}}).starts_with("event_time:"));
  CHECK(problem(json{{"event_time", 1}, {"gclid", "G"}, {"consent", {{"ad_user_data", "maybe"}}}}).empty());
  // An address alone is an identifier: given name, family name and country.
  CHECK(problem(json{{"event_time", 1}, {"first_name", "Ana"}, {"last_name", "Lima"}, {"country", "Brazil"}}).empty());
  CHECK(problem(json{{"event_time", 1}, {"first_name", "Ana"}, {"country", "BR"}}).starts_with("gclid:"));
}

TEST_CASE("google_data_manager classification") {
  const auto now = system_clock::now();
  SUBCASE("200: every event delivered (processing is asynchronous)") {
    const auto v = classify_data_manager_result(sequential(3), reply(200, R"({"requestId":"r-1"})"), now);
    for (const auto& e : v.events) CHECK(e.kind == outcome_kind::delivered);
    CHECK_FALSE(v.pause_destination.has_value());
  }
  SUBCASE("400 INVALID_ARGUMENT for one event: dead with Google's reason") {
    const auto v = classify_data_manager_result(
        sequential(1), reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_FORMAT", "events[0].event_timestamp")), now);
    CHECK(v.events[0].kind == outcome_kind::dead);
    CHECK(v.events[0].error.find("INVALID_FORMAT") != std::string::npos);
  }
  SUBCASE("400 for a batch without a location: every event resent alone") {
    const auto v = classify_data_manager_result(sequential(3), reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")), now);
    for (const auto& e : v.events) {
      CHECK(e.kind == outcome_kind::retry);
      CHECK(e.resend_alone);
    }
  }
  SUBCASE("400 for a batch naming events[1]: that one dead, the others resent alone") {
    const auto v = classify_data_manager_result(
        sequential(3),
        reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_SHA256_FORMAT", "events[1].user_data.user_identifiers[0]",
                            "The SHA256 encoded value is malformed.")),
        now);
    CHECK(v.events[0].resend_alone);
    CHECK(v.events[1].kind == outcome_kind::dead);
    CHECK(v.events[1].error ==
          "Data Manager: INVALID_SHA256_FORMAT: events[1].user_data.user_identifiers[0]: The SHA256 encoded value is "
          "malformed.");
    CHECK(v.events[2].resend_alone);
  }
  SUBCASE("400 with a destination-level reason pauses instead") {
    for (const char* reason : {"INVALID_CONVERSION_ACTION_ID", "INVALID_DESTINATION", "TERMS_AND_CONDITIONS_NOT_SIGNED",
                               "INVALID_CONVERSION_ACTION_TYPE"}) {
      CAPTURE(reason);
      const auto v = classify_data_manager_result(
          sequential(2), reply(400, dm_error(400, "INVALID_ARGUMENT", reason, "destinations[0]", "bad destination")), now);
      REQUIRE(v.pause_destination);
      CHECK(v.pause_destination->find(reason) != std::string::npos);
      CHECK(v.events[0].kind == outcome_kind::retry);
      CHECK_FALSE(v.events[0].resend_alone);
    }
  }
  SUBCASE("401 asks for a fresh token") {
    const auto v = classify_data_manager_result(
        sequential(2), reply(401, dm_error(401, "UNAUTHENTICATED", "ACCESS_TOKEN_EXPIRED", "", "Request had invalid authentication credentials.")),
        now);
    CHECK(v.reauthenticate);
    CHECK(v.events[0].kind == outcome_kind::retry);
  }
  SUBCASE("403 pauses and mentions the datamanager scope") {
    const auto v = classify_data_manager_result(
        sequential(1), reply(403, dm_error(403, "PERMISSION_DENIED", "PERMISSION_DENIED", "", "The caller does not have permission")),
        now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("auth/datamanager") != std::string::npos);
  }
  SUBCASE("429 honours RetryInfo, then Retry-After; 5xx retried") {
    json body{{"error",
               {{"code", 429},
                {"status", "RESOURCE_EXHAUSTED"},
                {"message", "Quota exceeded"},
                {"details", json::array({{{"@type", "type.googleapis.com/google.rpc.RetryInfo"}, {"retryDelay", "20s"}}})}}}};
    auto v = classify_data_manager_result(sequential(2), reply(429, body.dump()), now);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].retry_after == std::chrono::seconds{20});
    v = classify_data_manager_result(sequential(2), reply(429, "{}", {{"retry-after", "9"}}), now);
    CHECK(v.events[1].retry_after == std::chrono::seconds{9});
    for (const int status : {500, 502, 503, 504}) {
      v = classify_data_manager_result(sequential(2), reply(status, "oops"), now);
      CHECK(v.events[0].kind == outcome_kind::retry);
      CHECK_FALSE(v.pause_destination.has_value());
    }
  }
  SUBCASE("a transport failure is retried") {
    http_result r;
    r.error = transport_error::connection_reset;
    const auto v = classify_data_manager_result(sequential(1), r, now);
    CHECK(v.events[0].kind == outcome_kind::retry);
  }
}

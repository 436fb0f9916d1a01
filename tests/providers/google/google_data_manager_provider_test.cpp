// The google_data_manager provider without a network: settings, the
// events:ingest body (golden JSON), and the fast-fail error model turned into
// one outcome per row.
#include "providers/google/google_data_manager_provider.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "tests/support/fake_google_wire.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_data_manager_provider_test {

using namespace outbox::providers;
using namespace outbox::test;
using namespace std::chrono_literals;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

outbound_event event(std::string key, json payload, std::int64_t row = 1) {
  return test_event(std::move(payload), std::move(key), "Purchase", row);
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

}  // namespace

TEST_CASE("google_data_manager settings") {
  CHECK(validate_google_data_manager_settings(good_google_settings("account_id")).empty());
  const auto d = make_google_data_manager_destination(good_google_settings("account_id"), {});
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
  const std::vector<row> table{{"account_id", nullptr},
                               {"account_id", "12-34"},
                               {"conversion_action_id", nullptr},
                               {"conversion_action_id", "x1"},
                               {"login_account_id", "5"},
                               {"client_secret", nullptr},
                               {"refresh_token", nullptr},
                               {"base_url", "datamanager.googleapis.com"},
                               {"batch_size", "2001"},
                               {"validate_only", "perhaps"},
                               {"token_url", "mailto:x"}};
  for (const auto& r : table) {
    CAPTURE(r.key);
    auto s = good_google_settings("account_id");
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
  const google_data_manager_provider p{make_google_data_manager_destination(good_google_settings("account_id"), {})};
  const std::vector events{event("key-1", full_payload())};
  REQUIRE_FALSE(p.validate(events[0], system_clock::now()).has_value());
  const auto req = p.build_request(events, system_clock::now());
  outbox::test::fake_google_wire::keep_ingest_body(req.body);  // checks/datamanager_protos parses it
  CHECK(req.method == "POST");
  CHECK(req.url == "https://datamanager.googleapis.com/v1/events:ingest");
  CHECK(req.body ==
        R"({"destinations":[{"operatingAccount":{"accountId":"1234567890","accountType":"GOOGLE_ADS"},)"
        R"("productDestinationId":"987654"}],"encoding":"HEX","events":[{"adIdentifiers":{"gclid":"Cj0KCQjw-abc_123"},)"
        R"("consent":{"adPersonalization":"CONSENT_DENIED","adUserData":"CONSENT_GRANTED"},"conversionValue":123.45,)"
        R"("currency":"USD","eventSource":"OTHER","eventTimestamp":"2026-09-20T14:03:00Z","transactionId":"key-1",)"
        R"("userData":)"
        R"({"userIdentifiers":[{"emailAddress":"223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4"},)"
        R"({"phoneNumber":"9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd"}]}}]})");
  CHECK(req.headers == header_list{{"content-type", "application/json"}});
  CHECK(p.kind() == "google_data_manager");
  REQUIRE(p.oauth() != nullptr);
  CHECK(p.oauth()->refresh_token == "1//refresh-value");
}

TEST_CASE("google_data_manager request: validateOnly, loginAccount, offsets, extra, dedup") {
  auto s = good_google_settings("account_id");
  s["validate_only"] = "true";
  s["login_account_id"] = "111-222-3333";
  s["base_url"] = "https://localhost:9443";
  const google_data_manager_provider p{make_google_data_manager_destination(s, {{"x-trace", "1"}})};
  auto payload = full_payload();
  payload["event_time"] = "2026-09-20T16:03:00.750+02:00";
  payload["extra"] = {
      {"google_data_manager", {{"eventSource", "PHONE"}, {"transactionId", "nope"}, {"currency", nullptr}}}};
  const std::vector events{event("k1", payload, 1), event("k2", json{{"event_time", 1}, {"wbraid", "W"}}, 2),
                           event("k1", json{{"event_time", 2}, {"gbraid", "B"}}, 3)};
  const auto req = p.build_request(events, system_clock::now());
  outbox::test::fake_google_wire::keep_ingest_body(req.body);
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

  const auto v = p.classify(events, reply(200, R"({"requestId":"abc"})"), outbox::test::provider_test_now);
  CHECK(v.events[0].kind == outcome_kind::delivered);
  CHECK(v.events[1].kind == outcome_kind::delivered);
  CHECK(v.events[2].resend_alone);
  CHECK(v.events[2].kind == outcome_kind::retry);
}

TEST_CASE("google_data_manager validate") {
  const google_data_manager_provider p{make_google_data_manager_destination(good_google_settings("account_id"), {})};
  const auto problem = [&](json payload) {
    return p.validate(event("k", std::move(payload)), system_clock::now()).value_or("");
  };
  CHECK(problem(json{{"event_time", 1}, {"gclid", "G"}}).empty());
  CHECK(problem(json{{"event_time", 1}, {"email", "a@b.example"}}).empty());
  CHECK(problem(json{{"event_time", 1}}).starts_with("gclid:"));
  CHECK(problem(json{{"gclid", "G"}}).starts_with("event_time:"));
  CHECK(problem(json{{"event_time", 1}, {"gclid", "G"}, {"consent", {{"ad_user_data", "maybe"}}}}).empty());
  // An address alone is an identifier: given name, family name and country.
  CHECK(problem(json{{"event_time", 1},
                     {"first_name", "Ana"},
                     {"last_name", "Lima"},
                     {"country", "Brazil"},
                     {"zip", "01310-100"}})
            .empty());
  // Google requires the postal code in an address identifier: without it there is none.
  CHECK(problem(json{{"event_time", 1}, {"first_name", "Ana"}, {"last_name", "Lima"}, {"country", "Brazil"}})
            .starts_with("gclid:"));
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
        sequential(1), reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_FORMAT", "events[0].event_timestamp")),
        now);
    CHECK(v.events[0].kind == outcome_kind::dead);
    CHECK(v.events[0].error.find("INVALID_FORMAT") != std::string::npos);
  }
  SUBCASE("400 for a batch without a location: resent at once in two halves") {
    const auto v = classify_data_manager_result(sequential(5),
                                                reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")), now);
    for (const auto& e : v.events) {
      CHECK(e.kind == outcome_kind::retry);
      CHECK_FALSE(e.resend_alone);
      CHECK(e.error.find("sent again in halves") != std::string::npos);
    }
    CHECK(v.events[0].resend_group == 1);
    CHECK(v.events[2].resend_group == 1);
    CHECK(v.events[3].resend_group == 2);
    CHECK(v.events[4].resend_group == 2);
  }
  SUBCASE("400 for a batch naming events[1]: that one dead, the others resent together at once") {
    const auto v = classify_data_manager_result(
        sequential(3),
        reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_SHA256_FORMAT", "events[1].user_data.user_identifiers[0]",
                            "The SHA256 encoded value is malformed.")),
        now);
    CHECK(v.events[0].resend_group == 1);
    CHECK(v.events[1].kind == outcome_kind::dead);
    CHECK(v.events[1].error ==
          "Data Manager: INVALID_SHA256_FORMAT: events[1].user_data.user_identifiers[0]: The SHA256 encoded value is "
          "malformed.");
    CHECK(v.events[2].resend_group == 1);
    CHECK_FALSE(v.events[2].resend_alone);
  }
  SUBCASE("400 REQUIRED_FIELD_MISSING at events.events[2].event_source (v1.8's path): only that event is rejected") {
    const auto v = classify_data_manager_result(
        sequential(4),
        reply(400, dm_error(400, "INVALID_ARGUMENT", "REQUIRED_FIELD_MISSING", "events.events[2].event_source",
                            "Required field is missing.")),
        now);
    CHECK(v.events[2].kind == outcome_kind::dead);
    CHECK(v.events[2].error.find("REQUIRED_FIELD_MISSING") != std::string::npos);
    for (const std::size_t i : {0u, 1u, 3u}) {
      CAPTURE(i);
      CHECK(v.events[i].kind == outcome_kind::retry);
      CHECK(v.events[i].resend_group == 1);
    }
  }
  SUBCASE("400 with a destination-level reason pauses instead") {
    for (const char* reason : {"INVALID_CONVERSION_ACTION_ID", "INVALID_DESTINATION", "TERMS_AND_CONDITIONS_NOT_SIGNED",
                               "INVALID_CONVERSION_ACTION_TYPE"}) {
      CAPTURE(reason);
      const auto v = classify_data_manager_result(
          sequential(2), reply(400, dm_error(400, "INVALID_ARGUMENT", reason, "destinations[0]", "bad destination")),
          now);
      REQUIRE(v.pause_destination);
      CHECK(v.pause_destination->find(reason) != std::string::npos);
      CHECK(v.events[0].kind == outcome_kind::retry);
      CHECK_FALSE(v.events[0].resend_alone);
    }
  }
  SUBCASE("401 asks for a fresh token") {
    const auto v = classify_data_manager_result(sequential(2),
                                                reply(401, dm_error(401, "UNAUTHENTICATED", "ACCESS_TOKEN_EXPIRED", "",
                                                                    "Request had invalid authentication credentials.")),
                                                now);
    CHECK(v.reauthenticate);
    CHECK(v.events[0].kind == outcome_kind::retry);
  }
  SUBCASE("403 pauses and mentions the datamanager scope") {
    const auto v = classify_data_manager_result(
        sequential(1),
        reply(403, dm_error(403, "PERMISSION_DENIED", "PERMISSION_DENIED", "", "The caller does not have permission")),
        now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("auth/datamanager") != std::string::npos);
  }
  SUBCASE("429 honours RetryInfo, then Retry-After; 5xx retried") {
    json body{
        {"error",
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

TEST_CASE("google_data_manager batch split: Google's documented path events.events[i] locates the row") {
  const auto now = system_clock::now();
  const auto refused = [](std::string field) {
    return reply(400, dm_error(400, "INVALID_ARGUMENT", "INVALID_SHA256_FORMAT", std::move(field),
                               "The SHA256 encoded value is malformed."));
  };
  SUBCASE("events.events[1]: only that row dead, the others resent together") {
    const auto v =
        classify_data_manager_result(sequential(3), refused("events.events[1].user_data.user_identifiers[0]"), now);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].resend_group == 1);
    CHECK(v.events[1].kind == outcome_kind::dead);
    CHECK(v.events[1].error.find("INVALID_SHA256_FORMAT") != std::string::npos);
    CHECK(v.events[1].error.find("events.events[1].user_data.user_identifiers[0]") != std::string::npos);
    CHECK(v.events[2].kind == outcome_kind::retry);
    CHECK(v.events[2].resend_group == 1);
    CHECK(v.request_id.empty());
  }
  SUBCASE("the index is the request's, not the batch's: a held-back duplicate shifts it") {
    // Batch rows 0..3; row 1 was held back (same transactionId as row 0), so events[1] is batch row 2.
    const std::vector<std::optional<std::size_t>> rows{0, std::nullopt, 1, 2};
    const auto v = classify_data_manager_result(rows, refused("events.events[1].user_data.user_identifiers[0]"), now);
    CHECK(v.events[0].resend_group == 1);
    CHECK(v.events[1].resend_alone);  // never in one request with the row of the same transactionId
    CHECK(v.events[1].error.find("same transactionId") != std::string::npos);
    CHECK(v.events[2].kind == outcome_kind::dead);
    CHECK(v.events[3].resend_group == 1);
    CHECK(v.events[3].kind == outcome_kind::retry);
  }
  SUBCASE("a path outside events[] names no row: the batch is halved") {
    const auto v =
        classify_data_manager_result(sequential(2), refused("destinations[0].login_account.account_id"), now);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].resend_group == 1);
    CHECK(v.events[1].resend_group == 2);
  }
  SUBCASE("an index past the request names no row") {
    const auto v = classify_data_manager_result(sequential(2), refused("events.events[7].user_data"), now);
    CHECK(v.events[0].resend_group == 1);
    CHECK(v.events[1].resend_group == 2);
  }
}

TEST_CASE("google_data_manager request id from the events:ingest answer") {
  CHECK(data_manager_request_id(R"({"requestId":"a1b2-c3"})") == "a1b2-c3");
  CHECK(data_manager_request_id(R"({"requestId":"r-9","fieldWarnings":[{"reason":"X","field":"events[0]"}]})") ==
        "r-9");
  CHECK(data_manager_request_id("{}").empty());                   // validateOnly: "Only errors are returned"
  CHECK(data_manager_request_id(R"({"requestId":42})").empty());  // not a string
  CHECK(data_manager_request_id("not json").empty());
  CHECK(data_manager_request_id(R"(["requestId"])").empty());
  CHECK(data_manager_request_id(R"({"requestId":"line\nbreak"})").find('\n') == std::string::npos);

  const auto accepted =
      classify_data_manager_result(sequential(2), reply(200, R"({"requestId":"r-1"})"), system_clock::now());
  CHECK(accepted.request_id == "r-1");
  const auto checked = classify_data_manager_result(sequential(2), reply(200, "{}"), system_clock::now());
  CHECK(checked.request_id.empty());
  CHECK(checked.events[0].kind == outcome_kind::delivered);
  const auto refused =
      classify_data_manager_result(sequential(1), reply(503, R"({"requestId":"r-2"})"), system_clock::now());
  CHECK(refused.request_id.empty());  // only an accepted request is reconciled
}

namespace {

std::string status_body(json entry) {
  return json{{"requestStatusPerDestination", json::array({std::move(entry)})}}.dump();
}

json error_counts(const char* list, json items) { return json{{list, std::move(items)}}; }

}  // namespace

TEST_CASE("google_data_manager status: each requestStatus") {
  struct row {
    const char* name;
    json entry;
    request_state state;
    std::string detail;
  };
  const json invalid_gclid = {{"recordCount", "3"}, {"reason", "PROCESSING_ERROR_REASON_INVALID_GCLID"}};
  const json too_old = {{"recordCount", "2"}, {"reason", "PROCESSING_ERROR_REASON_EVENT_TOO_OLD"}};
  const std::vector<row> table{
      {"SUCCESS",
       {{"requestStatus", "SUCCESS"}, {"eventsIngestionStatus", {{"recordCount", "10"}}}},
       request_state::success,
       "10 ingested"},
      {"PROCESSING", {{"requestStatus", "PROCESSING"}}, request_state::processing, ""},
      {"FAILED",
       {{"requestStatus", "FAILED"}, {"errorInfo", error_counts("errorCounts", json::array({invalid_gclid, too_old}))}},
       request_state::failure,
       "errors: 3 PROCESSING_ERROR_REASON_INVALID_GCLID, 2 PROCESSING_ERROR_REASON_EVENT_TOO_OLD"},
      {"PARTIAL_SUCCESS",
       {{"requestStatus", "PARTIAL_SUCCESS"},
        {"eventsIngestionStatus", {{"recordCount", "7"}}},
        {"errorInfo", error_counts("errorCounts", json::array({invalid_gclid}))},
        {"warningInfo", error_counts("warningCounts", json::array({{{"recordCount", "1"},
                                                                    {"reason", "PROCESSING_WARNING_REASON_X"}}}))}},
       request_state::partial_success,
       "7 ingested; errors: 3 PROCESSING_ERROR_REASON_INVALID_GCLID; warnings: 1 PROCESSING_WARNING_REASON_X"},
      // Not final for Google ("repeat until SUCCESS, PARTIAL_SUCCESS, or FAILURE"): asked again.
      {"REQUEST_STATUS_UNKNOWN",
       {{"requestStatus", "REQUEST_STATUS_UNKNOWN"}},
       request_state::processing,
       "requestStatus REQUEST_STATUS_UNKNOWN"},
      {"a value added later", {{"requestStatus", "QUEUED"}}, request_state::processing, "requestStatus QUEUED"},
      {"no requestStatus",
       {{"eventsIngestionStatus", {{"recordCount", "1"}}}},
       request_state::processing,
       "requestStatus missing; 1 ingested"},
  };
  for (const auto& r : table) {
    CAPTURE(r.name);
    const auto s = read_data_manager_status(reply(200, status_body(r.entry)));
    CHECK(s.state == r.state);
    CHECK(s.detail == r.detail);
    CHECK_FALSE(s.retry_later);
  }
}

TEST_CASE("google_data_manager status: int64 counts arrive as strings (numbers accepted too)") {
  const auto detail = [](json count) {
    return read_data_manager_status(
               reply(200, status_body({{"requestStatus", "FAILED"},
                                       {"errorInfo", error_counts("errorCounts",
                                                                  json::array({{
                                                                      {"recordCount", std::move(count)},
                                                                      {"reason", "PROCESSING_ERROR_REASON_NO_CONSENT"},
                                                                  }}))}})))
        .detail;
  };
  CHECK(detail("9007199254740993") == "errors: 9007199254740993 PROCESSING_ERROR_REASON_NO_CONSENT");  // past 2^53
  CHECK(detail(5) == "errors: 5 PROCESSING_ERROR_REASON_NO_CONSENT");
  CHECK(detail(nullptr) == "errors: ? PROCESSING_ERROR_REASON_NO_CONSENT");
  CHECK(detail(json::array()) == "errors: ? PROCESSING_ERROR_REASON_NO_CONSENT");
}

TEST_CASE("google_data_manager status: answers that say nothing about the request") {
  SUBCASE("503, 500 and transport failures: asked again later") {
    for (const int status : {500, 502, 503, 504}) {
      CAPTURE(status);
      const auto s = read_data_manager_status(reply(status, R"({"error":{"code":503,"status":"UNAVAILABLE"}})"));
      CHECK(s.retry_later);
      CHECK_FALSE(s.quota_exhausted);
      CHECK(s.detail == "HTTP " + std::to_string(status));
    }
    for (const auto e : {transport_error::timeout, transport_error::connect, transport_error::connection_reset}) {
      http_result r;
      r.error = e;
      r.error_message = "read timed out";
      const auto s = read_data_manager_status(r);
      CHECK(s.retry_later);
      CHECK(s.detail == "no answer: read timed out");
    }
  }
  SUBCASE("401/403: the destination's credentials, asked again later") {
    for (const int status : {401, 403}) {
      const auto s = read_data_manager_status(reply(status, R"({"error":{"status":"PERMISSION_DENIED"}})"));
      CHECK(s.retry_later);
      CHECK(s.detail.find("PERMISSION_DENIED") != std::string::npos);
    }
  }
  SUBCASE("404 NOT_FOUND: Google does not know the request, unknown for good") {
    const auto s = read_data_manager_status(reply(404, R"({"error":{"code":404,"status":"NOT_FOUND"}})"));
    CHECK(s.state == request_state::unknown);
    CHECK_FALSE(s.retry_later);
    CHECK(s.detail.starts_with("HTTP 404: "));
    CHECK(s.detail.find("NOT_FOUND") != std::string::npos);
  }
  SUBCASE("a malformed 200 body: unreadable, asked again later") {
    for (const char* body : {"not json", "{}", "[]", R"({"requestStatusPerDestination":[]})",
                             R"({"requestStatusPerDestination":{"requestStatus":"SUCCESS"}})",
                             R"({"requestStatusPerDestination":["SUCCESS"]})"}) {
      CAPTURE(body);
      const auto s = read_data_manager_status(reply(200, body));
      CHECK(s.retry_later);
      CHECK(s.detail.starts_with("unreadable status answer: "));
    }
  }
}

TEST_CASE("google_data_manager status request: GET with the id escaped, extra headers, the delay") {
  auto s = good_google_settings("account_id");
  s["base_url"] = "https://localhost:9443";
  const google_data_manager_provider p{
      make_google_data_manager_destination(s, {{"x-trace", "1"}, {"Authorization", "Bearer not-this"}})};
  const auto req = p.status_request("a b/c?d=e&f+g%h~_.-Z9");
  REQUIRE(req);
  CHECK(req->method == "GET");
  CHECK(req->url == "https://localhost:9443/v1/requestStatus:retrieve?requestId=a%20b%2Fc%3Fd%3De%26f%2Bg%25h~_.-Z9");
  CHECK(req->body.empty());
  CHECK(req->headers == header_list{{"x-trace", "1"}});  // the engine adds its own bearer token
  CHECK(p.status_request("plain-id")->url.ends_with("?requestId=plain-id"));
  CHECK(p.status_check_delay() == std::chrono::seconds{1800});  // Google: "wait for 30 minutes"

  s["status_check_delay_seconds"] = "1";
  CHECK(google_data_manager_provider{make_google_data_manager_destination(s, {})}.status_check_delay() == 1s);
  for (const char* bad : {"0", "86401", "x", "-5", "1.5"}) {
    CAPTURE(bad);
    s["status_check_delay_seconds"] = bad;
    const auto problems = validate_google_data_manager_settings(s);
    REQUIRE(problems.size() == 1);
    CHECK(problems.front().first == "status_check_delay_seconds");
  }
  // The status of a Data Manager request travels through read_status.
  CHECK(p.read_status(reply(200, status_body({{"requestStatus", "SUCCESS"}}))).state == request_state::success);
}

}  // namespace google_data_manager_provider_test

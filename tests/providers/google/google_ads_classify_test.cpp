// How every answer of uploadClickConversions becomes one outcome per row: batch
// dedup, partial failures, RPC errors, and Google's error bodies and durations.
// Settings and the request body: google_ads_provider_test.cpp.
#include "providers/google/google_ads_provider.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_ads_classify_test {

using namespace outbox::providers;
using namespace outbox::test;
using namespace std::chrono_literals;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

google_ads_destination destination(bool validate_only = false) {
  auto d = make_google_ads_destination(good_google_settings("customer_id"), {});
  d.validate_only = validate_only;
  return d;
}

outbound_event event(std::string key, json payload, std::int64_t row = 1) {
  return test_event(std::move(payload), std::move(key), "Purchase", row);
}

json gclid_payload(std::string gclid, std::string time = "2026-09-20T14:03:00Z") {
  return json{{"event_time", std::move(time)}, {"gclid", std::move(gclid)}};
}

json ads_failure(std::vector<json> errors) {
  return json{{"@type", "type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure"},
              {"errors", std::move(errors)},
              {"requestId", "req-1"}};
}

json row_error(std::size_t index, std::string code, std::string message, std::string kind = "conversionUploadError") {
  return json{{"errorCode", {{kind, code}}},
              {"message", message},
              {"location", {{"fieldPathElements", json::array({{{"fieldName", "conversions"}, {"index", index}}})}}}};
}

std::string partial_response(std::size_t rows, std::vector<json> errors) {
  json results = json::array();
  for (std::size_t i = 0; i < rows; ++i) results.push_back(json{{"gclid", "x"}});
  json body{{"results", results}};
  if (!errors.empty()) {
    body["partialFailureError"] = {
        {"code", 3}, {"message", "first error"}, {"details", json::array({ads_failure(std::move(errors))})}};
  }
  return body.dump();
}

std::string rpc_error(int code, std::string status, std::string message, json details = json::array()) {
  return json{{"error", {{"code", code}, {"status", status}, {"message", message}, {"details", details}}}}.dump();
}

}  // namespace

TEST_CASE("google_ads batch: one orderId per request; repeats are held back and resent alone") {
  const google_ads_provider p{destination()};
  const std::vector events{
      event("k1", gclid_payload("G1"), 1),
      event("k2", gclid_payload("G2"), 2),
      event("k1", gclid_payload("G3"), 3),                          // same orderId as row 1
      event("k4", gclid_payload("G2"), 4),                          // same click and time as row 2
      event("k5", gclid_payload("G2", "2026-09-20T15:00:00Z"), 5),  // same click, later: fine
  };
  const auto req = p.build_request(events, system_clock::now());
  const auto conversions = json::parse(req.body)["conversions"];
  REQUIRE(conversions.size() == 3);
  CHECK(conversions[0]["orderId"] == "k1");
  CHECK(conversions[1]["orderId"] == "k2");
  CHECK(conversions[2]["orderId"] == "k5");

  // Google reports row index 2 of the request, which is event 4.
  const auto verdict =
      p.classify(events, reply(200, partial_response(3, {row_error(2, "EVENT_NOT_FOUND", "no click")})),
                 outbox::test::provider_test_now);
  REQUIRE(verdict.events.size() == 5);
  CHECK(verdict.events[0].kind == outcome_kind::delivered);
  CHECK(verdict.events[1].kind == outcome_kind::delivered);
  CHECK(verdict.events[2].resend_alone);
  CHECK(verdict.events[2].kind == outcome_kind::retry);
  CHECK(verdict.events[3].resend_alone);
  CHECK(verdict.events[4].kind == outcome_kind::dead);
  CHECK(verdict.events[4].error == "Google Ads: EVENT_NOT_FOUND: no click");
  CHECK_FALSE(verdict.pause_destination.has_value());
}

TEST_CASE("google_ads partial failure: one outcome per row code") {
  struct expectation {
    const char* code;
    outcome_kind kind;
    std::optional<std::chrono::seconds> retry_after;
    bool pauses;
  };
  const std::vector<expectation> table{
      {"ORDER_ID_ALREADY_IN_USE", outcome_kind::delivered, std::nullopt, false},
      {"CLICK_CONVERSION_ALREADY_EXISTS", outcome_kind::delivered, std::nullopt, false},
      {"CLICK_NOT_FOUND", outcome_kind::delivered, std::nullopt, false},
      {"TOO_RECENT_EVENT", outcome_kind::retry, std::chrono::hours{6}, false},
      {"TOO_RECENT_CONVERSION_ACTION", outcome_kind::retry, std::chrono::hours{6}, false},
      {"UNPARSEABLE_GCLID", outcome_kind::dead, std::nullopt, false},
      {"EVENT_NOT_FOUND", outcome_kind::dead, std::nullopt, false},
      {"EXPIRED_EVENT", outcome_kind::dead, std::nullopt, false},
      {"CONVERSION_PRECEDES_EVENT", outcome_kind::dead, std::nullopt, false},
      {"INVALID_USER_IDENTIFIER", outcome_kind::dead, std::nullopt, false},
      {"DUPLICATE_ORDER_ID", outcome_kind::dead, std::nullopt, false},
      {"DUPLICATE_CLICK_CONVERSION_IN_REQUEST", outcome_kind::dead, std::nullopt, false},
      {"GBRAID_WBRAID_BOTH_SET", outcome_kind::dead, std::nullopt, false},
      {"UNAUTHORIZED_CUSTOMER", outcome_kind::dead, std::nullopt, false},
      {"NO_CONVERSION_ACTION_FOUND", outcome_kind::retry, std::nullopt, true},
      {"INVALID_CONVERSION_ACTION_TYPE", outcome_kind::retry, std::nullopt, true},
      {"CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE", outcome_kind::retry, std::nullopt, true},
      {"CUSTOMER_NOT_ACCEPTED_CUSTOMER_DATA_TERMS", outcome_kind::retry, std::nullopt, true},
      {"CUSTOMER_NOT_ENABLED_ENHANCED_CONVERSIONS_FOR_LEADS", outcome_kind::retry, std::nullopt, true},
  };
  const auto rows = sequential(2);
  for (const auto& t : table) {
    CAPTURE(t.code);
    const auto verdict = classify_google_ads_result(
        rows, reply(200, partial_response(2, {row_error(1, t.code, "Google says so")})), system_clock::now());
    REQUIRE(verdict.events.size() == 2);
    CHECK(verdict.events[0].kind == outcome_kind::delivered);  // rows without an error
    CHECK(verdict.events[1].kind == t.kind);
    CHECK(verdict.events[1].retry_after == t.retry_after);
    CHECK_FALSE(verdict.events[1].resend_alone);
    CHECK(verdict.pause_destination.has_value() == t.pauses);
    CHECK_FALSE(verdict.reauthenticate);
    if (t.kind == outcome_kind::dead) {
      CHECK(verdict.events[1].error == std::string("Google Ads: ") + t.code + ": Google says so");
    }
    if (t.kind == outcome_kind::delivered) CHECK(verdict.events[1].error.empty());
  }
  SUBCASE("the allowlisting pause points at the Data Manager provider") {
    const auto v = classify_google_ads_result(
        rows,
        reply(200, partial_response(2, {row_error(0, "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE", "not allowlisted",
                                                  "notAllowlistedError")})),
        system_clock::now());
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("google_data_manager") != std::string::npos);
    CHECK(v.pause_destination->find("2026-06-15") != std::string::npos);
  }
  SUBCASE("transient row errors are retried without delay") {
    const auto v = classify_google_ads_result(
        rows, reply(200, partial_response(2, {row_error(0, "INTERNAL_ERROR", "oops", "internalError")})),
        system_clock::now());
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK_FALSE(v.events[0].retry_after.has_value());
  }
  SUBCASE("several errors for one row: the first decides; errors on several rows each apply") {
    const auto v = classify_google_ads_result(
        sequential(3),
        reply(200,
              partial_response(3, {row_error(2, "EXPIRED_EVENT", "old"), row_error(2, "ORDER_ID_ALREADY_IN_USE", "x"),
                                   row_error(0, "ORDER_ID_ALREADY_IN_USE", "again")})),
        system_clock::now());
    CHECK(v.events[0].kind == outcome_kind::delivered);
    CHECK(v.events[1].kind == outcome_kind::delivered);
    CHECK(v.events[2].kind == outcome_kind::dead);
  }
  SUBCASE("no partialFailureError: every row delivered; validateOnly answers may have no results") {
    const auto v = classify_google_ads_result(sequential(2), reply(200, "{}"), system_clock::now());
    CHECK(v.events[0].kind == outcome_kind::delivered);
    CHECK(v.events[1].kind == outcome_kind::delivered);
  }
  SUBCASE("an error with no row location applies to every row") {
    json error{{"errorCode", {{"conversionUploadError", "EXPIRED_EVENT"}}}, {"message", "old"}};
    const auto v =
        classify_google_ads_result(sequential(2), reply(200, partial_response(2, {error})), system_clock::now());
    CHECK(v.events[0].kind == outcome_kind::dead);
    CHECK(v.events[1].kind == outcome_kind::dead);
  }
  SUBCASE("a 200 whose body is not JSON is retried (orderId makes the resend safe)") {
    const auto v = classify_google_ads_result(sequential(2), reply(200, "<html>"), system_clock::now());
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[1].kind == outcome_kind::retry);
  }
}

TEST_CASE("google_ads RPC errors: destination-wide, retryable, and refused batches") {
  const auto now = system_clock::now();
  SUBCASE("401 UNAUTHENTICATED asks the engine to refresh the token and resend") {
    const auto v = classify_google_ads_result(
        sequential(2), reply(401, rpc_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")),
        now);
    CHECK(v.reauthenticate);
    CHECK_FALSE(v.pause_destination.has_value());
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].error.find("UNAUTHENTICATED") != std::string::npos);
  }
  SUBCASE("403 PERMISSION_DENIED pauses the destination") {
    const auto body =
        rpc_error(403, "PERMISSION_DENIED", "The caller does not have permission",
                  json::array({ads_failure({{{"errorCode", {{"authorizationError", "USER_PERMISSION_DENIED"}}},
                                             {"message", "User doesn't have permission to access customer."}}})}));
    const auto v = classify_google_ads_result(sequential(2), reply(403, body), now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("USER_PERMISSION_DENIED") != std::string::npos);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[1].kind == outcome_kind::retry);
  }
  SUBCASE("403 without details pauses too") {
    const auto v = classify_google_ads_result(sequential(1), reply(403, "forbidden"), now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("403") != std::string::npos);
  }
  SUBCASE("CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE says to use google_data_manager") {
    const auto body = rpc_error(
        403, "PERMISSION_DENIED", "The caller does not have permission",
        json::array(
            {ads_failure({{{"errorCode", {{"notAllowlistedError", "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE"}}},
                           {"message", "The customer is not allowlisted for this feature."}}})}));
    const auto v = classify_google_ads_result(sequential(1), reply(403, body), now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE") != std::string::npos);
    CHECK(v.pause_destination->find("google_data_manager") != std::string::npos);
  }
  SUBCASE("400 NO_CONVERSION_ACTION_FOUND pauses instead of killing every row") {
    const auto body = rpc_error(
        400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
        json::array(
            {ads_failure({{{"errorCode", {{"conversionUploadError", "NO_CONVERSION_ACTION_FOUND"}}},
                           {"message", "The conversion action specified in the upload request cannot be found."}}})}));
    const auto v = classify_google_ads_result(sequential(1), reply(400, body), now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("conversion_action_id") != std::string::npos);
    CHECK(v.events[0].kind == outcome_kind::retry);
  }
  SUBCASE("404 pauses: wrong base_url, version or customer") {
    const auto v = classify_google_ads_result(sequential(1), reply(404, "<html>Not Found</html>"), now);
    REQUIRE(v.pause_destination);
    CHECK(v.pause_destination->find("api_version") != std::string::npos);
  }
  SUBCASE("429 RESOURCE_EXHAUSTED honours google.rpc.RetryInfo") {
    const auto body =
        rpc_error(429, "RESOURCE_EXHAUSTED", "Too many requests",
                  json::array({{{"@type", "type.googleapis.com/google.rpc.RetryInfo"}, {"retryDelay", "30s"}}}));
    const auto v = classify_google_ads_result(sequential(2), reply(429, body, {{"retry-after", "5"}}), now);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].retry_after == std::chrono::seconds{30});
    CHECK(v.events[1].retry_after == std::chrono::seconds{30});
    CHECK_FALSE(v.pause_destination.has_value());
  }
  SUBCASE("429 honours Ads quotaErrorDetails.retryDelay, rounded up") {
    const auto body = rpc_error(
        429, "RESOURCE_EXHAUSTED", "Resource has been exhausted",
        json::array({ads_failure(
            {{{"errorCode", {{"quotaError", "RESOURCE_EXHAUSTED"}}},
              {"message", "Too many requests."},
              {"details", {{"quotaErrorDetails", {{"rateScope", "DEVELOPER"}, {"retryDelay", "12.5s"}}}}}}})}));
    const auto v = classify_google_ads_result(sequential(1), reply(429, body), now);
    CHECK(v.events[0].retry_after == std::chrono::seconds{13});
  }
  SUBCASE("429 without a delay in the body falls back to Retry-After") {
    const auto v = classify_google_ads_result(sequential(1), reply(429, "{}", {{"retry-after", "7"}}), now);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].retry_after == std::chrono::seconds{7});
  }
  SUBCASE("500, 503 and 504 are retried") {
    for (const int status : {500, 503, 504}) {
      CAPTURE(status);
      const auto v = classify_google_ads_result(
          sequential(2), reply(status, rpc_error(status, "UNAVAILABLE", "The service is currently unavailable.")), now);
      CHECK(v.events[0].kind == outcome_kind::retry);
      CHECK(v.events[1].kind == outcome_kind::retry);
      CHECK_FALSE(v.pause_destination.has_value());
      CHECK_FALSE(v.events[0].resend_alone);
    }
  }
  SUBCASE("a transport failure is retried") {
    http_result r;
    r.error = transport_error::timeout;
    r.error_message = "read timed out";
    const auto v = classify_google_ads_result(sequential(2), r, now);
    CHECK(v.events[0].kind == outcome_kind::retry);
    CHECK(v.events[0].error.find("timeout") != std::string::npos);
  }
  SUBCASE("400 INVALID_ARGUMENT for one conversion: dead with Google's message") {
    const auto body = rpc_error(
        400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
        json::array(
            {ads_failure({{{"errorCode", {{"requestError", "INVALID_INPUT"}}}, {"message", "Bad conversion."}}})}));
    const auto v = classify_google_ads_result(sequential(1), reply(400, body), now);
    CHECK(v.events[0].kind == outcome_kind::dead);
    CHECK(v.events[0].error.find("INVALID_INPUT") != std::string::npos);
    CHECK(v.events[0].error.find("Bad conversion.") != std::string::npos);
  }
  SUBCASE("400 INVALID_ARGUMENT for a batch: every row resent alone") {
    const auto v = classify_google_ads_result(
        sequential(3), reply(400, rpc_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")), now);
    for (const auto& e : v.events) {
      CHECK(e.kind == outcome_kind::retry);
      CHECK(e.resend_alone);
    }
  }
  SUBCASE("400 for a batch with located errors: those rows dead, the others resent alone") {
    const auto body = rpc_error(
        400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
        json::array({ads_failure({row_error(1, "INVALID_FIELD_VALUES_IN_DATE_TIME", "bad date", "dateError")})}));
    const auto v = classify_google_ads_result(sequential(3), reply(400, body), now);
    CHECK(v.events[0].resend_alone);
    CHECK(v.events[1].kind == outcome_kind::dead);
    CHECK_FALSE(v.events[1].resend_alone);
    CHECK(v.events[1].error == "Google Ads: INVALID_FIELD_VALUES_IN_DATE_TIME: bad date");
    CHECK(v.events[2].resend_alone);
  }
}

TEST_CASE("parse_google_duration") {
  CHECK(parse_google_duration("30s") == std::chrono::seconds{30});
  CHECK(parse_google_duration("0s") == std::chrono::seconds{0});
  CHECK(parse_google_duration("1.5s") == std::chrono::seconds{2});
  CHECK(parse_google_duration("0.000s") == std::chrono::seconds{0});
  CHECK(parse_google_duration("0.001s") == std::chrono::seconds{1});
  CHECK(parse_google_duration(" 45s ") == std::chrono::seconds{45});
  CHECK(parse_google_duration("99999999999999999999s") == std::chrono::seconds{86400});
  for (const char* bad : {"", "s", "30", "-1s", "1.s", ".5s", "1e3s", "abc", "30 s"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_google_duration(bad).has_value());
  }
}

TEST_CASE("parse_google_error_body: codes, messages, locations and delays") {
  const auto body = rpc_error(
      400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
      json::array({ads_failure({row_error(4, "UNPARSEABLE_GCLID", "bad gclid"),
                                {{"errorCode", {{"requestError", "INVALID_INPUT"}}}, {"message", "no location"}}}),
                   {{"@type", "type.googleapis.com/google.rpc.RetryInfo"}, {"retryDelay", "3s"}}}));
  const auto s = parse_google_error_body(body, "conversions");
  REQUIRE(s);
  CHECK(s->code == 400);
  CHECK(s->status == "INVALID_ARGUMENT");
  REQUIRE(s->errors.size() == 2);
  CHECK(s->errors[0].kind == "conversionUploadError");
  CHECK(s->errors[0].code == "UNPARSEABLE_GCLID");
  CHECK(s->errors[0].row == std::optional<std::size_t>{4});
  CHECK_FALSE(s->errors[1].row.has_value());
  CHECK(s->retry_delay == std::chrono::seconds{3});
  CHECK(s->has_code("INVALID_INPUT"));
  CHECK(describe_google_status(*s) ==
        "HTTP 400 INVALID_ARGUMENT: Request contains an invalid argument. (UNPARSEABLE_GCLID: bad gclid; "
        "INVALID_INPUT: no location)");
  CHECK_FALSE(parse_google_error_body("not json", "conversions").has_value());
  CHECK_FALSE(parse_google_error_body(R"({"results":[]})", "conversions").has_value());
}

}  // namespace google_ads_classify_test

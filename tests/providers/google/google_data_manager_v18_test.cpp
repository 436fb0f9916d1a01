// Data Manager as of v1.8 (2026-07-30): problems with optional fields come back as
// fieldWarnings in a 200 (the rows are sent, the warnings recorded), and
// eventSource, required in practice, is always sent. And its quotas: a 429 on a
// status read is the Google Cloud project's, with Google's RetryInfo.
#include <doctest/doctest.h>

#include "providers/google/google_data_manager_provider.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_data_manager_v18_test {

using namespace outbox::providers;
using outbox::test::reply;
using outbox::test::sequential;
using std::chrono::system_clock;

TEST_CASE("google_data_manager v1.8: fieldWarnings go to the event they name, or to every event") {
  const auto v = classify_data_manager_result(sequential(3), reply(200, R"({"requestId":"r-1","fieldWarnings":[
      {"reason":"INVALID_FORMAT","description":"Format is invalid.","field":"events.events[1].user_data.user_identifiers[2].address.postal_code"},
      {"reason":"DEPRECATED_FIELD","description":"Deprecated.","field":"encoding"},
      {"field":"events.events[9].consent"}, "not an object"]})"),
                                              system_clock::now());
  CHECK(v.request_id == "r-1");
  for (const auto& e : v.events) CHECK(e.kind == outcome_kind::delivered);
  REQUIRE(v.events[1].warnings.size() == 3);
  CHECK(v.events[1].warnings[0] ==
        dropped_field{"user_data.user_identifiers.address.postal_code", "INVALID_FORMAT", "Format is invalid."});
  CHECK(v.events[1].warnings[1] == dropped_field{"encoding", "DEPRECATED_FIELD", "Deprecated."});
  // An index past the request names no event of ours: every event gets it, reason unknown.
  CHECK(v.events[1].warnings[2] == dropped_field{"consent", "WARNING", ""});
  REQUIRE(v.events[0].warnings.size() == 2);
  CHECK(v.events[0].warnings[0].field == "encoding");
  CHECK(v.events[2].warnings.size() == 2);
  // A 200 without fieldWarnings, or not JSON at all, has none.
  const auto plain = classify_data_manager_result(sequential(2), reply(200, "{}"), system_clock::now());
  CHECK(plain.events[0].warnings.empty());
  CHECK(classify_data_manager_result(sequential(1), reply(200, "<html>"), system_clock::now())
            .events[0]
            .warnings.empty());
}

TEST_CASE("google_data_manager v1.8: eventSource is always sent, from the action_source") {
  CHECK(data_manager_event_source("website") == "WEB");
  CHECK(data_manager_event_source("app") == "APP");
  CHECK(data_manager_event_source("physical_store") == "IN_STORE");
  CHECK(data_manager_event_source("phone_call") == "PHONE");
  CHECK(data_manager_event_source("system_generated") == "OTHER");
  CHECK(data_manager_event_source("") == "OTHER");
}

TEST_CASE("google_data_manager status: 429 RESOURCE_EXHAUSTED is the project's quota, with Google's RetryInfo") {
  const auto with_retry = read_data_manager_status(
      reply(429, R"({"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded.","details":[)"
                 R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"42s"}]}})"));
  CHECK(with_retry.retry_later);
  REQUIRE(with_retry.quota_exhausted);
  CHECK(*with_retry.quota_exhausted == std::chrono::seconds{42});
  CHECK(with_retry.detail == "HTTP 429 RESOURCE_EXHAUSTED: Quota exceeded.");
  const auto bare = read_data_manager_status(reply(429, "Too Many Requests"));
  REQUIRE(bare.quota_exhausted);
  CHECK(*bare.quota_exhausted == std::chrono::seconds{0});  // the reconciler's own back-off decides
  CHECK(bare.detail == "HTTP 429 RESOURCE_EXHAUSTED");
  // The quota is the Google Cloud project's: the number in front of the OAuth client id.
  CHECK(google_cloud_project_of("123456789012-abc.apps.googleusercontent.com") == "google-cloud-project:123456789012");
  CHECK(google_cloud_project_of("fake-client.apps.googleusercontent.com") ==
        "google-cloud-project:fake-client.apps.googleusercontent.com");
}

}  // namespace google_data_manager_v18_test

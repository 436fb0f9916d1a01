// The google_ads provider without a network: settings, the request body (golden
// JSON), conversionDateTime, Google's email rules, the payload mapping and what
// makes a row dead before any request. Answers: google_ads_classify_test.cpp.
#include "providers/google/google_ads_provider.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_ads_provider_test {

using namespace outbox::providers;
using namespace outbox::test;
using namespace std::chrono_literals;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

constexpr std::string_view gmail_hash = "223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4";
constexpr std::string_view phone_hash = "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd";

google_ads_destination destination(bool validate_only = false) {
  auto d = make_google_ads_destination(good_google_settings("customer_id"), {});
  d.validate_only = validate_only;
  return d;
}

outbound_event event(std::string key, json payload, std::int64_t row = 1) {
  return test_event(std::move(payload), std::move(key), "Purchase", row);
}

json full_payload() {
  return json{{"event_time", "2026-09-20T14:03:00Z"},
              {"value", 123.45},
              {"currency", "USD"},
              {"order_id", "CRM-17"},
              {"email", "cloudy.sanfrancisco+shopping@gmail.com"},
              {"phone", "+1 213-373-4253"},
              {"gclid", "Cj0KCQjw-abc_123"},
              {"consent", {{"ad_user_data", "GRANTED"}, {"ad_personalization", "DENIED"}}}};
}

json gclid_payload(std::string gclid, std::string time = "2026-09-20T14:03:00Z") {
  return json{{"event_time", std::move(time)}, {"gclid", std::move(gclid)}};
}

bool mentions(const std::vector<std::pair<std::string, std::string>>& problems, std::string_view key) {
  return std::any_of(problems.begin(), problems.end(), [&](const auto& p) { return p.first == key; });
}

}  // namespace

TEST_CASE("google_ads settings: valid ones, defaults, and dashes stripped") {
  CHECK(validate_google_ads_settings(good_google_settings("customer_id")).empty());
  const auto d = make_google_ads_destination(good_google_settings("customer_id"), {});
  CHECK(d.customer_id == "1234567890");
  CHECK(d.conversion_action_id == "987654");
  CHECK(d.base_url == "https://googleads.googleapis.com");
  CHECK(d.api_version == "v26");
  CHECK(d.batch_size == 1000);
  CHECK_FALSE(d.validate_only);
  CHECK(d.login_customer_id.empty());
  CHECK(d.developer_token.empty());
  CHECK(d.oauth.token_url == "https://oauth2.googleapis.com/token");
  CHECK(d.oauth.client_id == "cid.apps.googleusercontent.com");
  CHECK(d.oauth.client_secret == "s3cr3t-value");
  CHECK(d.oauth.refresh_token == "1//refresh-value");
  CHECK(d.url() == "https://googleads.googleapis.com/v26/customers/1234567890:uploadClickConversions");
  CHECK(d.conversion_action() == "customers/1234567890/conversionActions/987654");

  auto s = good_google_settings("customer_id");
  s["login_customer_id"] = "111-222-3333";
  s["developer_token"] = "devtoken123";
  s["base_url"] = "https://localhost:8443/";
  s["api_version"] = "v25";
  s["token_url"] = "https://localhost:8443/token";
  s["validate_only"] = "yes";
  s["batch_size"] = "2000";
  s["default_phone_country_code"] = "+44";
  REQUIRE(validate_google_ads_settings(s).empty());
  const auto e = make_google_ads_destination(s, {{"x-trace", "1"}});
  CHECK(e.login_customer_id == "1112223333");
  CHECK(e.developer_token == "devtoken123");
  CHECK(e.url() == "https://localhost:8443/v25/customers/1234567890:uploadClickConversions");
  CHECK(e.oauth.token_url == "https://localhost:8443/token");
  CHECK(e.validate_only);
  CHECK(e.batch_size == 2000);
  CHECK(e.default_phone_country_code == "44");
  CHECK(e.extra_headers.size() == 1);
}

TEST_CASE("google_ads settings: every problem names its key and no secret is echoed") {
  struct row {
    const char* key;
    const char* value;  // nullptr: remove the key
  };
  const std::vector<row> table{
      {"customer_id", nullptr},
      {"customer_id", "12345"},
      {"customer_id", "123-456-789a"},
      {"conversion_action_id", nullptr},
      {"conversion_action_id", "abc"},
      {"login_customer_id", "42"},
      {"client_id", nullptr},
      {"client_secret", nullptr},
      {"refresh_token", nullptr},
      {"token_url", "ftp://x"},
      {"base_url", "googleads.com"},
      {"base_url", "https://x/?q=1"},
      {"api_version", "26"},
      {"api_version", "v26_1"},
      {"validate_only", "maybe"},
      {"batch_size", "0"},
      {"batch_size", "2001"},
      {"batch_size", "ten"},
      {"default_phone_country_code", "0044"},
      {"default_phone_country_code", "+1234"},
      {"developer_token", "has space"},
  };
  for (const auto& r : table) {
    CAPTURE(r.key);
    CAPTURE(r.value ? r.value : "(removed)");
    auto s = good_google_settings("customer_id");
    if (r.value) {
      s[r.key] = r.value;
    } else {
      s.erase(r.key);
    }
    const auto problems = validate_google_ads_settings(s);
    REQUIRE(problems.size() == 1);
    CHECK(problems.front().first == r.key);
    for (const auto& [key, message] : problems) {
      CHECK(message.find("s3cr3t-value") == std::string::npos);
      CHECK(message.find("1//refresh-value") == std::string::npos);
    }
  }
  CHECK(mentions(validate_google_ads_settings({}), "customer_id"));
  CHECK_THROWS_AS((void)make_google_ads_destination({}, {}), std::invalid_argument);
}

TEST_CASE("conversionDateTime: the frozen event_time in UTC, 'yyyy-mm-dd hh:mm:ss+00:00'") {
  CHECK(google_ads_date_time(0) == "1970-01-01 00:00:00+00:00");
  CHECK(google_ads_date_time(1790000000) == "2026-09-21 14:13:20+00:00");
  CHECK(google_ads_date_time(1798761599) == "2026-12-31 23:59:59+00:00");
  // An RFC 3339 time with an offset is converted to UTC.
  const google_ads_provider p{destination()};
  const auto req =
      p.build_request(std::vector{event("k", gclid_payload("G1", "2026-09-20T16:03:59+02:00"))}, system_clock::now());
  CHECK(json::parse(req.body)["conversions"][0]["conversionDateTime"] == "2026-09-20 14:03:59+00:00");
  // Unix seconds work too.
  const auto req2 =
      p.build_request(std::vector{event("k", json{{"event_time", 1790000000}, {"gclid", "G1"}})}, system_clock::now());
  CHECK(json::parse(req2.body)["conversions"][0]["conversionDateTime"] == "2026-09-21 14:13:20+00:00");
}

TEST_CASE("google_ads request: golden body, headers and URL") {
  const google_ads_provider p{destination()};
  const std::vector events{event("key-1", full_payload())};
  REQUIRE_FALSE(p.validate(events[0], system_clock::now()).has_value());
  const auto req = p.build_request(events, system_clock::now());
  CHECK(req.method == "POST");
  CHECK(req.url == "https://googleads.googleapis.com/v26/customers/1234567890:uploadClickConversions");
  CHECK(req.body == R"({"conversions":[{"consent":{"adUserData":"GRANTED"},)"
                    R"("conversionAction":"customers/1234567890/conversionActions/987654",)"
                    R"("conversionDateTime":"2026-09-20 14:03:00+00:00","conversionValue":123.45,"currencyCode":"USD",)"
                    R"("gclid":"Cj0KCQjw-abc_123","orderId":"key-1","userIdentifiers":[)"
                    R"({"hashedEmail":"223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4"},)"
                    R"({"hashedPhoneNumber":"9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd"}]}],)"
                    R"("partialFailure":true})");
  const auto header = [&](std::string_view name) -> std::optional<std::string> {
    for (const auto& [n, v] : req.headers) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  CHECK(header("content-type") == "application/json");
  CHECK_FALSE(header("developer-token").has_value());
  CHECK_FALSE(header("login-customer-id").has_value());
  CHECK_FALSE(header("authorization").has_value());  // the engine adds the bearer token
  // The same rows give byte-identical bodies on every attempt.
  CHECK(p.build_request(events, system_clock::now() + 1h).body == req.body);

  auto s = good_google_settings("customer_id");
  s["login_customer_id"] = "1112223333";
  s["developer_token"] = "devtoken123";
  s["validate_only"] = "true";
  const google_ads_provider q{make_google_ads_destination(
      s, {{"x-trace", "7"}, {"Authorization", "Bearer evil"}, {"login-customer-id", "999"}})};
  const auto r2 = q.build_request(events, system_clock::now());
  const auto body = json::parse(r2.body);
  CHECK(body["validateOnly"] == true);
  CHECK(body["partialFailure"] == true);
  std::vector<std::pair<std::string, std::string>> expected{{"content-type", "application/json"},
                                                            {"developer-token", "devtoken123"},
                                                            {"login-customer-id", "1112223333"},
                                                            {"x-trace", "7"}};
  CHECK(r2.headers == expected);
  CHECK(q.oauth() != nullptr);
  CHECK(q.oauth()->client_id == "cid.apps.googleusercontent.com");
  CHECK(q.max_batch_size() == 1000);
  CHECK(q.kind() == "google_ads");
}

TEST_CASE("Google email rules: the providers.md vector, and other domains keep dots and tags") {
  const google_ads_provider p{destination()};
  const auto hashed = [&](std::string email) {
    const auto req =
        p.build_request(std::vector{event("k", json{{"event_time", 1790000000}, {"gclid", "G"}, {"email", email}})},
                        system_clock::now());
    return json::parse(req.body)["conversions"][0]["userIdentifiers"][0]["hashedEmail"].get<std::string>();
  };
  CHECK(hashed("cloudy.sanfrancisco+shopping@gmail.com") == gmail_hash);
  CHECK(hashed("  Cloudy.SanFrancisco+shopping@GMAIL.com ") == gmail_hash);
  CHECK(hashed("cloudysanfrancisco@googlemail.com") != gmail_hash);  // another address, same rules
  CHECK(hashed("cloudy.sanfrancisco+shopping@example.com") != gmail_hash);
  // A hash the CRM computed is passed through (lower-cased).
  CHECK(hashed(std::string(gmail_hash)) == gmail_hash);
}

TEST_CASE("google_ads mapping: one click id, consent, value, and extra.google_ads merged") {
  const google_ads_provider p{destination()};
  const auto conversion = [&](json payload, std::string key = "k") {
    const auto req = p.build_request(std::vector{event(std::move(key), std::move(payload))}, system_clock::now());
    return json::parse(req.body)["conversions"][0];
  };
  SUBCASE("gbraid or wbraid when there is no gclid; gclid wins when both are there") {
    CHECK(conversion({{"event_time", 1}, {"gbraid", "B1"}})["gbraid"] == "B1");
    CHECK(conversion({{"event_time", 1}, {"wbraid", "W1"}})["wbraid"] == "W1");
    const auto both = conversion({{"event_time", 1}, {"gclid", "G"}, {"wbraid", "W1"}});
    CHECK(both["gclid"] == "G");
    CHECK_FALSE(both.contains("wbraid"));
  }
  SUBCASE("no value, currency or consent: the fields are left out") {
    const auto c = conversion(gclid_payload("G"));
    CHECK_FALSE(c.contains("conversionValue"));
    CHECK_FALSE(c.contains("currencyCode"));
    CHECK_FALSE(c.contains("consent"));
    CHECK_FALSE(c.contains("userIdentifiers"));
  }
  SUBCASE("ad_personalization alone is not sent: click conversions take ad_user_data only") {
    auto payload = gclid_payload("G");
    payload["consent"] = {{"ad_personalization", "GRANTED"}};
    CHECK_FALSE(conversion(payload).contains("consent"));
    payload["consent"] = {{"ad_user_data", "DENIED"}};
    CHECK(conversion(payload)["consent"] == json{{"adUserData", "DENIED"}});
  }
  SUBCASE("enhanced conversions for leads: email only, no click id") {
    const auto c = conversion({{"event_time", 1}, {"email", "a@example.com"}});
    CHECK_FALSE(c.contains("gclid"));
    CHECK(c["userIdentifiers"].size() == 1);
  }
  SUBCASE("a phone without a country code uses default_phone_country_code") {
    auto s = good_google_settings("customer_id");
    s["default_phone_country_code"] = "1";
    const google_ads_provider q{make_google_ads_destination(s, {})};
    const auto req =
        q.build_request(std::vector{event("k", json{{"event_time", 1}, {"gclid", "G"}, {"phone", "(213) 373-4253"}})},
                        system_clock::now());
    CHECK(json::parse(req.body)["conversions"][0]["userIdentifiers"][0]["hashedPhoneNumber"] == phone_hash);
  }
  SUBCASE("extra.google_ads adds and overrides fields, null removes one; orderId and conversionAction stay ours") {
    auto payload = full_payload();
    payload["extra"] = {
        {"google_ads",
         {{"customVariables", json::array({{{"conversionCustomVariable", "customers/1/cv/2"}, {"value", "gold"}}})},
          {"conversionValue", 99},
          {"userIdentifiers", nullptr},
          {"orderId", "not-ours"},
          {"conversionAction", "customers/1/conversionActions/1"}}},
        {"meta", {{"ignored", true}}}};
    const auto c = conversion(payload, "key-9");
    CHECK(c["customVariables"][0]["value"] == "gold");
    CHECK(c["conversionValue"] == 99);
    CHECK_FALSE(c.contains("userIdentifiers"));
    CHECK(c["orderId"] == "key-9");
    CHECK(c["conversionAction"] == "customers/1234567890/conversionActions/987654");
    CHECK_FALSE(c.contains("ignored"));
  }
}

TEST_CASE("google_ads validate: what makes a row dead before any request, naming the field") {
  const google_ads_provider p{destination()};
  const auto now = system_clock::now();
  const auto problem = [&](json payload) { return p.validate(event("k", std::move(payload)), now).value_or(""); };
  CHECK(problem(gclid_payload("G")).empty());
  CHECK(problem({{"event_time", 1}, {"phone", "+12133734253"}}).empty());
  CHECK(problem({{"event_time", 1}}).starts_with("gclid:"));
  CHECK(problem({{"event_time", 1}, {"email", "   "}}).starts_with("gclid:"));
  CHECK(problem({{"gclid", "G"}}).starts_with("event_time:"));
  CHECK(problem({{"gclid", "G"}, {"event_time", "yesterday"}}).starts_with("event_time:"));
  CHECK(problem({{"gclid", "G"}, {"event_time", 1}, {"currency", "euro"}}).empty());  // dropped, not fatal
  CHECK(problem({{"gclid", "G"}, {"event_time", 1}, {"value", -5}}).starts_with("value:"));
  CHECK(problem({{"gclid", "G"}, {"event_time", 1}, {"extra", {{"google_ads", "text"}}}}).empty());
  const auto dropped = p.prepare(event("k", {{"gclid", "G"}, {"event_time", 1}, {"currency", "euro"}}), now).dropped;
  REQUIRE(dropped.size() == 1);
  CHECK(dropped.front().text() == "currency: invalid_currency (must be a 3-letter ISO 4217 code, got 'euro')");
}

}  // namespace google_ads_provider_test

#include "providers/canonical_event.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace canonical_event_test {

using namespace outbox::providers;
using nlohmann::json;

namespace {

canonical_event parsed(const json& payload) {
  auto result = parse_canonical_event(payload);
  if (const auto* e = std::get_if<field_error>(&result)) FAIL("unexpected error: " << e->message());
  return std::get<canonical_event>(result);
}

using strings = std::vector<std::string>;

// The reasons of the fields dropped while parsing, as "field: reason".
strings drops(const json& payload) {
  strings out;
  for (const auto& d : parsed(payload).dropped) out.push_back(d.field + ": " + d.reason);
  return out;
}

// The detail of the only field dropped.
std::string drop_detail(const json& payload) {
  const auto e = parsed(payload);
  REQUIRE(e.dropped.size() == 1);
  return e.dropped.front().field + ": " + e.dropped.front().detail;
}

std::string error_of(const json& payload) {
  auto result = parse_canonical_event(payload);
  if (const auto* e = std::get_if<field_error>(&result)) return e->message();
  FAIL("expected an error for " << payload.dump());
  return {};
}

}  // namespace

TEST_CASE("canonical event: a full payload") {
  const auto e = parsed(json::parse(R"({
    "event_time": 1767225600, "value": 120.5, "currency": "EUR", "order_id": "A-17",
    "action_source": "website", "event_source_url": "https://example.com/form",
    "email": " Mary@Example.com ", "phone": "+1 650 555 1212", "first_name": "Mary", "last_name": "Smith",
    "city": "Menlo Park", "state": "CA", "zip": "94025", "country": "US", "date_of_birth": "1990-05-26",
    "external_id": "crm-42", "client_ip": "203.0.113.7", "user_agent": "Mozilla/5.0",
    "fbc": "fb.1.1554763741205.AbCd", "fbp": "fb.1.1558571054389.1098115397", "ttclid": "E.C.P.abc",
    "ttp": "ttp-1", "gclid": "Cj0KCQ", "gbraid": "gb", "wbraid": "wb", "lead_id": "1234567890123456",
    "consent": {"ad_user_data": "GRANTED", "ad_personalization": "DENIED"},
    "extra": {"meta": {"opt_out": false}, "tiktok": {"limited_data_use": true}}
  })"));
  CHECK(e.event_time == 1767225600);
  CHECK(e.value == 120.5);
  CHECK(e.currency == "EUR");
  CHECK(e.order_id == "A-17");
  CHECK(e.action_source == "website");
  CHECK(e.event_source_url == "https://example.com/form");
  CHECK(e.email == strings{"Mary@Example.com"});  // trimmed only; normalization is per provider
  CHECK(e.phone == strings{"+1 650 555 1212"});
  CHECK(e.first_name == strings{"Mary"});
  CHECK(e.last_name == strings{"Smith"});
  CHECK(e.city == strings{"Menlo Park"});
  CHECK(e.state == strings{"CA"});
  CHECK(e.zip == strings{"94025"});
  CHECK(e.country == strings{"US"});
  CHECK(e.date_of_birth == strings{"1990-05-26"});
  CHECK(e.external_id == strings{"crm-42"});
  CHECK(e.dropped.empty());
  CHECK(e.client_ip == "203.0.113.7");
  CHECK(e.user_agent == "Mozilla/5.0");
  CHECK(e.fbc == "fb.1.1554763741205.AbCd");
  CHECK(e.fbp == "fb.1.1558571054389.1098115397");
  CHECK(e.ttclid == "E.C.P.abc");
  CHECK(e.ttp == "ttp-1");
  CHECK(e.gclid == "Cj0KCQ");
  CHECK(e.gbraid == "gb");
  CHECK(e.wbraid == "wb");
  CHECK(e.lead_id == "1234567890123456");
  CHECK(e.consent.ad_user_data == consent_value::granted);
  CHECK(e.consent.ad_personalization == consent_value::denied);
  REQUIRE(e.extra_for("meta") != nullptr);
  CHECK(*e.extra_for("meta") == json{{"opt_out", false}});
  CHECK(e.extra_for("google_ads") == nullptr);
}

TEST_CASE("canonical event: minimal payload and defaults") {
  const auto e = parsed(json{{"event_time", 1700000000}});
  CHECK(e.event_time == 1700000000);
  CHECK(e.action_source == "system_generated");
  CHECK_FALSE(e.value.has_value());
  CHECK_FALSE(e.currency.has_value());
  CHECK(e.email.empty());
  CHECK_FALSE(e.consent.ad_user_data.has_value());
  CHECK(e.extra == json::object());
  CHECK(e.extra_for("meta") == nullptr);
}

TEST_CASE("canonical event: null, empty and blank values are absent; unknown keys ignored") {
  const auto e = parsed(json{{"event_time", 1700000000},
                             {"email", nullptr},
                             {"phone", ""},
                             {"city", "   "},
                             {"currency", nullptr},
                             {"consent", nullptr},
                             {"extra", nullptr},
                             {"brand_new_field", {1, 2}}});
  CHECK(e.email.empty());
  CHECK(e.phone.empty());
  CHECK(e.city.empty());
  CHECK_FALSE(e.currency.has_value());
  CHECK(e.dropped.empty());  // absent is not dropped
}

TEST_CASE("canonical event: user fields take lists; exact repeats removed; at most ten values") {
  const auto e = parsed(json{{"event_time", 1700000000},
                             {"email", {"a@x.com", " b@y.com ", "a@x.com", "", nullptr}},
                             {"phone", {"+33 6 12 34 56 78", 16505551212LL}},
                             {"gender", "F"}});
  CHECK(e.email == strings{"a@x.com", "b@y.com"});
  CHECK(e.phone == strings{"+33 6 12 34 56 78", "16505551212"});
  CHECK(e.gender == strings{"F"});
  CHECK(e.dropped.empty());

  json many = json::array();
  for (int i = 0; i < 12; ++i) many.push_back("user" + std::to_string(i) + "@x.com");
  const auto capped = parsed(json{{"event_time", 1700000000}, {"email", many}});
  CHECK(capped.email.size() == canonical_max_values);
  CHECK(drops(json{{"event_time", 1700000000}, {"email", many}}) == strings{"email: too_many_values"});
  // An entry of the wrong type is dropped; the other values stay.
  const json mixed{{"event_time", 1700000000}, {"email", {"a@x.com", {{"x", 1}}, true}}};
  CHECK(parsed(mixed).email == strings{"a@x.com"});
  CHECK(drops(mixed) == strings{"email: wrong_type", "email: wrong_type"});
  // Single-value fields take the first of a list.
  const json ids{{"event_time", 1700000000}, {"fbc", {"fb.1.1.a", "fb.1.1.b"}}};
  CHECK(parsed(ids).fbc == "fb.1.1.a");
  CHECK(drops(ids) == strings{"fbc: single_value"});
}

TEST_CASE("canonical event: event_time forms") {
  CHECK(parsed(json{{"event_time", "1700000000"}}).event_time == 1700000000);
  CHECK(parsed(json{{"event_time", 1700000000.9}}).event_time == 1700000000);
  CHECK(parsed(json{{"event_time", "2026-01-01T00:00:00Z"}}).event_time == 1767225600);
  CHECK(parsed(json{{"event_time", "2026-01-01T02:00:00+02:00"}}).event_time == 1767225600);
  CHECK(parsed(json{{"event_time", "2025-12-31T19:00:00.750-05:00"}}).event_time == 1767225600);
  CHECK(parsed(json{{"event_time", "2026-01-01 00:00:00z"}}).event_time == 1767225600);

  CHECK(error_of(json::object()) == "event_time: missing");
  CHECK(error_of(json{{"event_time", nullptr}}) == "event_time: missing");
  CHECK(error_of(json{{"event_time", "yesterday"}}) ==
        "event_time: not a unix timestamp or RFC 3339 time, got 'yesterday'");
  CHECK(error_of(json{{"event_time", "2026-02-30T00:00:00Z"}})
            .starts_with("event_time: not a unix timestamp or RFC 3339 time"));
  CHECK(error_of(json{{"event_time", "2026-01-01T00:00:00"}})
            .starts_with("event_time: not a unix timestamp or RFC 3339 time"));  // no offset
  CHECK(error_of(json{{"event_time", -5}}).starts_with("event_time: not a unix timestamp"));
  CHECK(error_of(json{{"event_time", 0}}).starts_with("event_time: not a unix timestamp"));
  CHECK(error_of(json{{"event_time", true}}) == "event_time: not a unix timestamp or RFC 3339 time, got a boolean");
  CHECK(error_of(json{{"event_time", 1700000000000LL}}) ==
        "event_time: 1700000000000 looks like milliseconds; send unix seconds");
}

TEST_CASE("parse_rfc3339 and format_rfc3339_utc") {
  CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_rfc3339("2024-02-29T12:34:56Z") == 1709210096);
  CHECK(parse_rfc3339("2016-12-31T23:59:60Z") == 1483228799);  // leap second read as :59
  CHECK_FALSE(parse_rfc3339("2023-02-29T00:00:00Z"));
  CHECK_FALSE(parse_rfc3339("2024-01-01T24:00:00Z"));
  CHECK_FALSE(parse_rfc3339("2024-01-01T00:00:00+2:00"));
  CHECK_FALSE(parse_rfc3339("2024-01-01T00:00:00.Z"));
  CHECK_FALSE(parse_rfc3339("2024-01-01"));
  CHECK(format_rfc3339_utc(1767225600) == "2026-01-01T00:00:00Z");
  CHECK(format_rfc3339_utc(1709210096) == "2024-02-29T12:34:56Z");
}

TEST_CASE("canonical event: value and currency; unusable ones are dropped, not fatal") {
  CHECK(parsed(json{{"event_time", 1700000000}, {"value", 10}}).value == 10.0);
  CHECK(parsed(json{{"event_time", 1700000000}, {"value", "19.99"}}).value == 19.99);  // Django Decimal
  CHECK(parsed(json{{"event_time", 1700000000}, {"currency", "eur"}}).currency == "EUR");
  CHECK(parsed(json{{"event_time", 1700000000}, {"currency", " usd "}}).currency == "USD");
  const json euro{{"event_time", 1700000000}, {"currency", "euro"}};
  CHECK_FALSE(parsed(euro).currency.has_value());
  CHECK(drop_detail(euro) == "currency: must be a 3-letter ISO 4217 code, got 'euro'");
  CHECK(drops(json{{"event_time", 1700000000}, {"currency", "€"}}) == strings{"currency: invalid_currency"});
  CHECK(drop_detail(json{{"event_time", 1700000000}, {"currency", 978}}) ==
        "currency: must be a 3-letter ISO 4217 code, got a number");
  CHECK(drop_detail(json{{"event_time", 1700000000}, {"value", "12,50"}}) == "value: must be a number, got '12,50'");
  CHECK(drops(json{{"event_time", 1700000000}, {"value", true}}) == strings{"value: invalid_value"});
}

TEST_CASE("canonical event: field types") {
  CHECK(parsed(json{{"event_time", 1700000000}, {"order_id", 17}}).order_id == "17");
  CHECK(parsed(json{{"event_time", 1700000000}, {"lead_id", 1234567890123456LL}}).lead_id == "1234567890123456");
  CHECK(parsed(json{{"event_time", 1700000000}, {"phone", 16505551212LL}}).phone == strings{"16505551212"});
  CHECK(parsed(json{{"event_time", 1700000000}, {"external_id", 42}}).external_id == strings{"42"});
  CHECK(parsed(json{{"event_time", 1700000000}, {"zip", 2134}}).zip == strings{"2134"});
  CHECK(drop_detail(json{{"event_time", 1700000000}, {"email", 5}}) == "email: must be a string, got a number");
  CHECK(drop_detail(json{{"event_time", 1700000000}, {"order_id", {{"a", 1}}}}) ==
        "order_id: must be a string or an integer, got an object");
  CHECK(parsed(json{{"event_time", 1700000000}, {"fbc", json::array()}}).fbc == std::nullopt);
}

TEST_CASE("canonical event: action_source and event_source_url") {
  CHECK(parsed(json{{"event_time", 1700000000}, {"action_source", "physical_store"}}).action_source ==
        "physical_store");
  const json crm{{"event_time", 1700000000}, {"action_source", "crm"}};
  CHECK(parsed(crm).action_source == "system_generated");
  CHECK(drops(crm) == strings{"action_source: unknown_action_source"});
  CHECK(drop_detail(crm).starts_with("action_source: must be one of email, website, app,"));
  const json url{{"event_time", 1700000000}, {"event_source_url", "example.com/form"}};
  CHECK_FALSE(parsed(url).event_source_url.has_value());
  CHECK(drop_detail(url) == "event_source_url: must be an http:// or https:// URL");  // the value may be personal
}

TEST_CASE("canonical event: date_of_birth is only type-checked (each provider normalizes it)") {
  for (const char* dob : {"2000-02-29", "19900131", "2/16/1997", "1990-02-30"}) {
    const auto e = parsed(json{{"event_time", 1700000000}, {"date_of_birth", dob}});
    CHECK(e.date_of_birth == strings{dob});
    CHECK(e.dropped.empty());
  }
  CHECK(parsed(json{{"event_time", 1700000000}, {"date_of_birth", 19900131}}).date_of_birth == strings{"19900131"});
}

TEST_CASE("canonical event: consent") {
  const auto e = parsed(json{{"event_time", 1700000000}, {"consent", {{"ad_user_data", "granted"}}}});
  CHECK(e.consent.ad_user_data == consent_value::granted);
  CHECK_FALSE(e.consent.ad_personalization.has_value());
  CHECK(to_string(consent_value::granted) == "GRANTED");
  CHECK(to_string(consent_value::denied) == "DENIED");
  const json yes{{"event_time", 1700000000}, {"consent", {{"ad_personalization", "yes"}}}};
  CHECK_FALSE(parsed(yes).consent.ad_personalization.has_value());
  CHECK(drop_detail(yes) == "consent.ad_personalization: must be GRANTED or DENIED, got 'yes'");
  CHECK(drop_detail(json{{"event_time", 1700000000}, {"consent", "GRANTED"}}) ==
        "consent: must be an object, got a string");
}

TEST_CASE("canonical event: extra") {
  const json list{{"event_time", 1700000000}, {"extra", {1}}};
  CHECK(parsed(list).extra == json::object());
  CHECK(drop_detail(list) == "extra: must be an object, got an array");
  const json meta{{"event_time", 1700000000}, {"extra", {{"meta", "x"}, {"tiktok", {{"a", 1}}}}}};
  CHECK(drop_detail(meta) == "extra.meta: must be an object, got a string");
  CHECK(parsed(meta).extra == json{{"tiktok", {{"a", 1}}}});
  // Unknown provider keys are kept but not checked.
  const auto e = parsed(json{{"event_time", 1700000000}, {"extra", {{"snapchat", 3}}}});
  CHECK(e.extra == json{{"snapchat", 3}});
}

TEST_CASE("canonical event: not an object") {
  CHECK(error_of(json::array()) == "payload: must be a JSON object, got an array");
}

TEST_CASE("merge_extra: a JSON merge patch") {
  json event{{"event_id", "k"}, {"custom_data", {{"value", 1}, {"currency", "EUR"}}}, {"opt_out", false}};
  const json extra{{"custom_data", {{"contents", {{{"id", "sku"}}}}, {"currency", nullptr}}}, {"opt_out", true}};
  merge_extra(event, &extra);
  CHECK(event ==
        json{{"event_id", "k"}, {"custom_data", {{"value", 1}, {"contents", {{{"id", "sku"}}}}}}, {"opt_out", true}});
  merge_extra(event, nullptr);
  CHECK(event["opt_out"] == true);
}

}  // namespace canonical_event_test

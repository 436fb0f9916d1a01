#include "providers/tiktok/tiktok_provider.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dispatcher/config/config.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace tiktok_provider_test {

using namespace outbox::providers;
using namespace outbox::test;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

const system_clock::time_point now = system_clock::time_point{} + std::chrono::seconds{1767229200};

tiktok_destination destination() {
  tiktok_destination d;
  d.access_token = "tt-test-token";
  d.event_source_id = "CRM123EVENTSET";
  return d;
}

outbound_event event(json payload, std::string key = "key-1", std::string name = "SubmitForm") {
  return test_event(std::move(payload), std::move(key), std::move(name), 9);
}

std::string tiktok_body(long long code, std::string message = "OK") {
  return json{{"code", code}, {"message", std::move(message)}, {"request_id", "req-1"}, {"data", json::object()}}
      .dump();
}

}  // namespace

TEST_CASE("tiktok: golden request with every mapped field") {
  auto d = destination();
  d.test_event_code = "TEST42";
  d.default_phone_country_code = "1";
  d.lead_event_source = "Acme CRM";
  const tiktok_provider p{d};
  const auto e = event(json::parse(R"({
    "event_time": "2026-01-01T00:00:00Z", "value": "99.90", "currency": "usd", "order_id": 1717,
    "event_source_url": "https://example.com/form",
    "email": " Mary@Example.com ", "phone": "650 555 1212", "external_id": "CRM-42",
    "ttclid": "E.C.P.abc", "ttp": "ttp-cookie", "client_ip": "203.0.113.7", "user_agent": "Mozilla/5.0",
    "lead_id": "7061234567890", "first_name": "Mary", "fbc": "not-for-tiktok",
    "extra": {"tiktok": {"limited_data_use": false, "properties": {"content_type": "product"},
                         "event_id": "extra cannot replace the key"},
              "meta": {"opt_out": true}}
  })"));
  REQUIRE_FALSE(p.validate(e, now).has_value());
  const auto request = p.build_request(std::span{&e, 1}, now);
  CHECK(request.method == "POST");
  CHECK(request.url == "https://business-api.tiktok.com/open_api/v1.3/event/track/");
  CHECK(header_of(request, "access-token") == "tt-test-token");  // no "Bearer"
  CHECK(header_of(request, "content-type") == "application/json");
  CHECK_FALSE(header_of(request, "authorization").has_value());
  CHECK(request.body.find("tt-test-token") == std::string::npos);
  CHECK(json::parse(request.body) == json::parse(R"({
    "event_source": "crm",
    "event_source_id": "CRM123EVENTSET",
    "test_event_code": "TEST42",
    "data": [{
      "event": "SubmitForm",
      "event_time": 1767225600,
      "event_id": "key-1",
      "limited_data_use": false,
      "user": {
        "email": "f1904cf1a9d73a55fa5de0ac823c4403ded71afd4c3248d00bdcd0866552bb79",
        "phone": "1e231c66011e7a2d867a9cfae267a6aff103cf4913640b6e71a99850fc0ffbc8",
        "external_id": "c995655d9d4b04d624bc48b0bf3e4e773b6a3ab4dc56e9ec623aebf3ff5be297",
        "ttclid": "E.C.P.abc",
        "ttp": "ttp-cookie",
        "ip": "203.0.113.7",
        "user_agent": "Mozilla/5.0"
      },
      "properties": {"currency": "USD", "value": 99.9, "order_id": "1717", "content_type": "product"},
      "page": {"url": "https://example.com/form"},
      "lead": {"lead_id": "7061234567890", "lead_event_source": "Acme CRM"}
    }]
  })"));
}

TEST_CASE("tiktok: a minimal web batch") {
  auto d = destination();
  d.event_source = "web";
  d.event_source_id = "PIXELCODE";
  d.base_url = "https://localhost:9443";
  const tiktok_provider p{d};
  const std::vector<outbound_event> events{
      event(json{{"event_time", 1767225600}, {"event_source_url", "https://example.com/a"}}, "k1", "ViewContent"),
      event(json{{"event_time", 1767225601}, {"event_source_url", "https://example.com/b"}, {"lead_id", "L1"}}, "k2",
            "Lead")};
  const auto request = p.build_request(events, now);
  CHECK(request.url == "https://localhost:9443/open_api/v1.3/event/track/");
  CHECK(json::parse(request.body) == json::parse(R"({
    "event_source": "web",
    "event_source_id": "PIXELCODE",
    "data": [
      {"event": "ViewContent", "event_time": 1767225600, "event_id": "k1", "user": {},
       "page": {"url": "https://example.com/a"}},
      {"event": "Lead", "event_time": 1767225601, "event_id": "k2", "user": {},
       "page": {"url": "https://example.com/b"}}
    ]
  })"));
}

TEST_CASE("tiktok: validate") {
  const tiktok_provider crm{destination()};
  CHECK(crm.validate(event(json::object()), now) == "event_time: missing");
  CHECK_FALSE(crm.validate(event(json{{"event_time", 1767225600}, {"currency", "euro"}}), now).has_value());  // dropped
  CHECK_FALSE(crm.validate(event(json{{"event_time", 1767225600}}), now).has_value());
  auto d = destination();
  d.event_source = "web";
  const tiktok_provider web{d};
  CHECK(web.validate(event(json{{"event_time", 1767225600}}), now) ==
        "event_source_url: required by TikTok for web events (page.url)");
}

TEST_CASE("tiktok: the acceptance window per event source, in both directions") {
  const std::int64_t now_s = 1767229200;
  const auto at = [](std::int64_t t) { return event(json{{"event_time", t}, {"event_source_url", "https://e.x/"}}); };
  const tiktok_provider crm{destination()};  // crm: 28 days
  CHECK_FALSE(crm.validate(at(now_s - 28 * 86400), now).has_value());
  CHECK(crm.validate(at(now_s - 29 * 86400), now) ==
        "event_time is 29 days old; TikTok takes crm events up to 28 days old (max_event_age_days)");
  CHECK(crm.validate(at(now_s - 400 * 86400), now).has_value());  // the 400-day-old event of the report
  CHECK(crm.validate(at(now_s + 3600), now) ==
        "event_time is 60 minutes in the future; check the CRM's clock and time zone");
  CHECK_FALSE(crm.validate(at(now_s + 300), now).has_value());

  auto settings =
      std::map<std::string, std::string>{{"access_token", "t"}, {"event_source", "web"}, {"event_source_id", "PIX"}};
  const tiktok_provider web{make_tiktok_destination(settings)};  // web: 7 days
  CHECK_FALSE(web.validate(at(now_s - 7 * 86400), now).has_value());
  CHECK(web.validate(at(now_s - 8 * 86400), now).value_or("").starts_with("event_time is 8 days old"));
  settings["max_event_age_days"] = "2";
  CHECK(tiktok_provider{make_tiktok_destination(settings)}.validate(at(now_s - 3 * 86400), now).has_value());
  settings["max_event_age_days"] = "365";
  CHECK(validate_tiktok_settings(settings).size() == 1);
}

TEST_CASE("tiktok: test_event_code at the top level; the lead object for CRM sources only") {
  // test_event_code goes at the top level, beside event_source, as TikTok's own template sends it.
  auto with_code = destination();
  with_code.test_event_code = "TEST1";
  const auto sample = event(json{{"event_time", 1767225600}});
  const auto coded = json::parse(tiktok_provider{with_code}.build_request(std::span{&sample, 1}, now).body);
  CHECK(coded["test_event_code"] == "TEST1");
  CHECK_FALSE(coded["data"][0].contains("test_event_code"));

  const tiktok_provider crm{destination()};
  const tiktok_provider& p = crm;
  const auto e = event(json{{"event_time", 1767225600}, {"lead_id", "7061234567890"}}, "k", "Qualified");
  const auto body = json::parse(p.build_request(std::span{&e, 1}, now).body);
  CHECK(body["data"][0]["lead"] == json{{"lead_id", "7061234567890"}, {"lead_event_source", "outbox-dispatcher"}});
  const auto bad = event(json{{"value", 1}});
  CHECK_THROWS_AS((void)crm.build_request(std::span{&bad, 1}, now), std::invalid_argument);
}

TEST_CASE("tiktok: response code table") {
  CHECK(tiktok_action_for(0) == tiktok_code_action::delivered);
  for (const long long code : {40100LL, 40132LL, 50000LL, 50002LL, 60001LL, 61000LL, 51234LL}) {
    CAPTURE(code);
    CHECK(tiktok_action_for(code) == tiktok_code_action::retry);
  }
  for (const long long code : {40102LL, 40104LL, 40105LL}) {
    CAPTURE(code);
    CHECK(tiktok_action_for(code) == tiktok_code_action::pause_destination);
  }
  for (const long long code : {40000LL, 40001LL, 40002LL, 40062LL, 40063LL, 41000LL, 1LL}) {
    CAPTURE(code);
    CHECK(tiktok_action_for(code) == tiktok_code_action::reject_batch);
  }
}

TEST_CASE("tiktok: parse_tiktok_response and error text") {
  const auto r = parse_tiktok_response(tiktok_body(40002, "Invalid value for data[1].event_time"));
  REQUIRE(r.has_value());
  CHECK(r->code == 40002);
  CHECK(r->request_id == "req-1");
  CHECK(tiktok_error_text(*r) == "TikTok code 40002: Invalid value for data[1].event_time [request_id req-1]");
  CHECK_FALSE(parse_tiktok_response("{}"));
  CHECK_FALSE(parse_tiktok_response(R"({"code": "0"})"));
  CHECK_FALSE(parse_tiktok_response("not json"));
}

TEST_CASE("tiktok: classify") {
  const tiktok_provider p{destination()};
  const auto events = test_batch(3, json{{"event_time", 1767225600}, {"email", "a@b.c"}});

  const auto ok = p.classify(events, reply(200, tiktok_body(0)), outbox::test::provider_test_now);
  REQUIRE(ok.events.size() == 3);
  for (const auto& e : ok.events) CHECK(e.kind == outcome_kind::delivered);

  // 200 with an error code is an error.
  const auto rejected = p.classify(events, reply(200, tiktok_body(40002, "Invalid parameter: data[2].event")),
                                   outbox::test::provider_test_now);
  REQUIRE(rejected.events.size() == 3);
  for (const auto& e : rejected.events) {
    CHECK(e.kind == outcome_kind::retry);
    CHECK(e.resend_alone);
  }
  const auto single =
      p.classify(std::span{events.data(), 1}, reply(200, tiktok_body(40062, "PII fields must be hashed")),
                 outbox::test::provider_test_now);
  REQUIRE(single.events.size() == 1);
  CHECK(single.events[0].kind == outcome_kind::dead);
  CHECK(single.events[0].error == "TikTok code 40062: PII fields must be hashed [request_id req-1]");

  for (const long long code : {40100LL, 40132LL, 50000LL, 50002LL, 60001LL, 61000LL}) {
    CAPTURE(code);
    const auto out = p.classify(events, reply(200, tiktok_body(code, "busy")), outbox::test::provider_test_now);
    CHECK_FALSE(out.pause_destination.has_value());
    for (const auto& e : out.events) {
      CHECK(e.kind == outcome_kind::retry);
      CHECK_FALSE(e.resend_alone);
      CHECK(e.error.starts_with("TikTok code " + std::to_string(code)));
    }
  }

  for (const long long code : {40102LL, 40104LL, 40105LL}) {
    CAPTURE(code);
    const auto out = p.classify(events, reply(200, tiktok_body(code, "Access token is incorrect or revoked")),
                                outbox::test::provider_test_now);
    REQUIRE(out.pause_destination.has_value());
    CHECK(out.pause_destination->starts_with("TikTok refused the access token"));
    for (const auto& e : out.events) CHECK(e.kind == outcome_kind::retry);
  }

  // HTTP-level failures.
  const auto unavailable =
      p.classify(events, reply(503, "down", {{"retry-after", "12"}}), outbox::test::provider_test_now);
  CHECK(unavailable.events[0].kind == outcome_kind::retry);
  CHECK(unavailable.events[0].retry_after == std::chrono::seconds{12});
  const auto throttled =
      p.classify(events, reply(429, tiktok_body(40100, "Too many requests")), outbox::test::provider_test_now);
  CHECK(throttled.events[0].kind == outcome_kind::retry);
  const auto error_5xx_code =
      p.classify(events, reply(500, tiktok_body(40002, "odd")), outbox::test::provider_test_now);
  CHECK(error_5xx_code.events[0].kind == outcome_kind::retry);
  CHECK_FALSE(error_5xx_code.events[0].resend_alone);
  const auto forbidden = p.classify(events, reply(403, "<html>forbidden</html>"), outbox::test::provider_test_now);
  CHECK(forbidden.pause_destination.has_value());
  const auto not_tiktok =
      p.classify(events, reply(200, "<html>captive portal</html>"), outbox::test::provider_test_now);
  CHECK(not_tiktok.events[0].kind == outcome_kind::retry);
  CHECK(not_tiktok.events[0].error.starts_with("HTTP 200 without a TikTok response code"));

  http_result reset;
  reset.error = transport_error::connection_reset;
  reset.maybe_delivered = true;
  const auto r = p.classify(events, reset, outbox::test::provider_test_now);
  REQUIRE(r.events.size() == 3);
  CHECK(r.events[0].kind == outcome_kind::retry);
}

TEST_CASE("tiktok: settings validation and defaults") {
  using settings = std::map<std::string, std::string>;
  CHECK(validate_tiktok_settings(settings{{"access_token", "t"}, {"event_source_id", "X1"}}).empty());
  CHECK(validate_tiktok_settings(settings{{"access_token", "t"},
                                          {"event_source_id", "X1"},
                                          {"event_source", "web"},
                                          {"base_url", "http://127.0.0.1:8080"},
                                          {"test_event_code", "TEST1"},
                                          {"batch_size", "1"},
                                          {"default_phone_country_code", "49"},
                                          {"lead_event_source", "Acme"}})
            .empty());
  const auto bad = validate_tiktok_settings(settings{{"access_token", "bad token"},
                                                     {"event_source", "email"},
                                                     {"base_url", "ftp://x"},
                                                     {"batch_size", "5000"},
                                                     {"default_phone_country_code", "abc"}});
  std::map<std::string, std::string> by_key(bad.begin(), bad.end());
  CHECK(by_key["access_token"] == "must not contain spaces or control characters");
  CHECK(by_key["event_source"] == "must be web, app, offline or crm (got \"email\")");
  CHECK(by_key["event_source_id"].starts_with("is required"));
  CHECK(by_key["base_url"].starts_with("must start with https://"));
  CHECK(by_key["batch_size"] == "must be a whole number from 1 to 1000 (got \"5000\")");
  CHECK(by_key["default_phone_country_code"].starts_with("must be a country calling code"));
  CHECK(validate_tiktok_settings(settings{{"event_source_id", "X"}})[0].second.starts_with("is required"));

  const auto d = make_tiktok_destination(settings{{"access_token", "t"}, {"event_source_id", "X1"}});
  CHECK(d.event_source == "crm");
  CHECK(d.base_url == "https://business-api.tiktok.com");
  CHECK(d.batch_size == 500);
  CHECK(d.lead_event_source == "outbox-dispatcher");
  const tiktok_provider p{make_tiktok_destination(
      settings{{"access_token", "t"}, {"event_source_id", "X1"}, {"batch_size", "50"}, {"base_url", "https://h/"}})};
  CHECK(p.kind() == "tiktok");
  CHECK(p.max_batch_size() == 50);
  CHECK(p.destination().base_url == "https://h");
  CHECK_FALSE(p.hold_reclaimed());
}

TEST_CASE("tiktok: the configuration accepts a tiktok destination and masks the token") {
  const auto cfg = outbox::load_config({{"OUTBOX_DEST__TIKTOK__DEFAULT__ACCESS_TOKEN", "tt-super-secret"},
                                        {"OUTBOX_DEST__TIKTOK__DEFAULT__EVENT_SOURCE_ID", "CRM123"},
                                        {"OUTBOX_METRICS_ADDRESS", ""}});
  REQUIRE(cfg.find_destination("tiktok", "default") != nullptr);
  const auto text = outbox::describe(cfg);
  CHECK(text.find("tt-super-secret") == std::string::npos);
  CHECK(text.find("OUTBOX_DEST__TIKTOK__DEFAULT__EVENT_SOURCE_ID=CRM123") != std::string::npos);
}

}  // namespace tiktok_provider_test

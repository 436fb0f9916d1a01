#include "providers/meta/meta_provider.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dispatcher/config/config.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace meta_provider_test {

using namespace outbox::providers;
using namespace outbox::test;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

const system_clock::time_point now = system_clock::time_point{} + std::chrono::seconds{1767229200};
constexpr std::int64_t an_hour_ago = 1767225600;

meta_destination destination() {
  meta_destination d;
  d.pixel_id = "1234567890";
  d.access_token = "EAAB-test-token";
  return d;
}

outbound_event event(json payload, std::string key = "key-1", std::string name = "Lead") {
  return test_event(std::move(payload), std::move(key), std::move(name), 7);
}

json minimal(std::int64_t event_time = an_hour_ago) { return json{{"event_time", event_time}, {"email", "a@b.c"}}; }

std::string envelope(int code, std::optional<int> subcode = std::nullopt, bool transient = false,
                     std::string user_msg = {}) {
  json error{{"message", "Invalid parameter"},
             {"type", "OAuthException"},
             {"code", code},
             {"is_transient", transient},
             {"fbtrace_id", "AbC123"}};
  if (subcode) error["error_subcode"] = *subcode;
  if (!user_msg.empty()) {
    error["error_user_title"] = "Invalid event";
    error["error_user_msg"] = user_msg;
  }
  return json{{"error", error}}.dump();
}

std::string problem_for(const std::vector<std::pair<std::string, std::string>>& problems, const std::string& key) {
  for (const auto& [k, p] : problems) {
    if (k == key) return p;
  }
  return {};
}

}  // namespace

TEST_CASE("meta: golden request with every canonical field") {
  auto d = destination();
  d.app_secret = "shhh-app-secret";
  d.test_event_code = "TEST123";
  d.default_phone_country_code = "1";
  const meta_provider p{d};
  const auto e = event(json::parse(R"({
    "event_time": 1767225600, "value": 120.5, "currency": "eur", "order_id": "A-17",
    "email": " Mary@Example.com ", "phone": "(650) 555-1212", "first_name": "Mary", "last_name": "Smith",
    "city": "Menlo Park", "state": "CA", "zip": "94025-1234", "country": "US", "date_of_birth": "1990-05-26",
    "external_id": "CRM-42", "client_ip": "203.0.113.7", "user_agent": "Mozilla/5.0",
    "fbc": "fb.1.1554763741205.AbCd", "fbp": "fb.1.1558571054389.1098115397", "lead_id": "1234567890123456",
    "ttclid": "not-for-meta", "gclid": "not-for-meta",
    "extra": {"meta": {"opt_out": false, "custom_data": {"contents": [{"id": "sku-1", "quantity": 1}]},
                       "event_id": "extra cannot replace the key"},
              "tiktok": {"limited_data_use": true}}
  })"));
  REQUIRE_FALSE(p.validate(e, now).has_value());
  const auto request = p.build_request(std::span{&e, 1}, now);
  CHECK(request.method == "POST");
  // The token and proof where Meta's reference puts them: the query string.
  CHECK(request.url ==
        "https://graph.facebook.com/v27.0/1234567890/events?access_token=EAAB-test-token"
        "&appsecret_proof=92bc3a24652404524b039b32899ecad82b7b603cf9552dda1881574018c85be8");
  CHECK(request.headers == header_list{{"content-type", "application/json"}});
  CHECK(request.body.find(R"(],"test_event_code":"TEST123"})") != std::string::npos);  // after data
  const json expected = json::parse(R"({
    "test_event_code": "TEST123",
    "data": [{
      "event_name": "Lead",
      "event_time": 1767225600,
      "event_id": "key-1",
      "action_source": "system_generated",
      "opt_out": false,
      "user_data": {
        "em": ["f1904cf1a9d73a55fa5de0ac823c4403ded71afd4c3248d00bdcd0866552bb79"],
        "ph": ["e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176"],
        "fn": ["6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec"],
        "ln": ["6627835f988e2c5e50533d491163072d3f4f41f5c8b04630150debb3722ca2dd"],
        "ct": ["0007a3d64c01e23d5075203c5977c14e4f7e01a3fc570686fcc50b5e1dd42685"],
        "st": ["6959097001d10501ac7d54c0bdb8db61420f658f2922cc26e46d536119a31126"],
        "zp": ["b9a9cf3cd3723a2e91b7c23ecf68456e872b6e5d86e5cab7f3d45a7302da32c7"],
        "country": ["79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621"],
        "db": ["d0cf9433a50859f0877a584f19306277aef4081821376a37fc7ade354fdcc189"],
        "external_id": ["c995655d9d4b04d624bc48b0bf3e4e773b6a3ab4dc56e9ec623aebf3ff5be297"],
        "client_ip_address": "203.0.113.7",
        "client_user_agent": "Mozilla/5.0",
        "fbc": "fb.1.1554763741205.AbCd",
        "fbp": "fb.1.1558571054389.1098115397",
        "lead_id": 1234567890123456
      },
      "custom_data": {
        "value": 120.5, "currency": "EUR", "order_id": "A-17",
        "event_source": "crm", "lead_event_source": "outbox-dispatcher",
        "contents": [{"id": "sku-1", "quantity": 1}]
      }
    }]
  })");
  CHECK(json::parse(request.body) == expected);
  // Byte-identical on every attempt.
  CHECK(p.build_request(std::span{&e, 1}, now + std::chrono::hours{5}).body == request.body);
}

TEST_CASE("meta: golden request for a minimal website batch") {
  auto d = destination();
  d.base_url = "https://localhost:8443";
  d.api_version = "v24.0";
  d.lead_event_source = "Acme CRM";
  const meta_provider p{d};
  const std::vector<outbound_event> events{
      event(json{{"event_time", an_hour_ago},
                 {"action_source", "website"},
                 {"event_source_url", "https://example.com/signup"},
                 {"user_agent", "UA"}},
            "k1", "CompleteRegistration"),
      event(json{{"event_time", "2026-01-01T00:00:00Z"}, {"lead_id", "L-9"}}, "k2", "Lead")};
  for (const auto& e : events) REQUIRE_FALSE(p.validate(e, now).has_value());
  const auto request = p.build_request(events, now);
  CHECK(request.url == "https://localhost:8443/v24.0/1234567890/events?access_token=EAAB-test-token");
  // Compact: no space after a separator, no line breaks.
  CHECK(request.body.find(": ") == std::string::npos);
  CHECK(request.body.find(", ") == std::string::npos);
  CHECK(request.body.find('\n') == std::string::npos);
  CHECK(json::parse(request.body) == json::parse(R"({
    "data": [
      {"event_name": "CompleteRegistration", "event_time": 1767225600, "event_id": "k1",
       "action_source": "website", "event_source_url": "https://example.com/signup",
       "user_data": {"client_user_agent": "UA"}},
      {"event_name": "Lead", "event_time": 1767225600, "event_id": "k2", "action_source": "system_generated",
       "user_data": {"lead_id": "L-9"},
       "custom_data": {"event_source": "crm", "lead_event_source": "Acme CRM"}}
    ]
  })"));
}

TEST_CASE("meta: unusable user values are left out, not fatal") {
  const meta_provider p{destination()};
  const auto e = event(json{{"event_time", an_hour_ago},
                            {"phone", "call me"},
                            {"country", "Atlantis"},
                            {"email", "a@b.c"},
                            {"date_of_birth", "1990-02-30"}});
  const auto prepared = p.prepare(e, now);
  REQUIRE_FALSE(prepared.error.has_value());
  const auto body = json::parse(p.build_request(std::span{&e, 1}, now).body);
  const auto& user = body["data"][0]["user_data"];
  CHECK(user.contains("em"));
  CHECK_FALSE(user.contains("ph"));
  CHECK_FALSE(user.contains("country"));
  CHECK_FALSE(user.contains("db"));
  std::vector<std::string> fields;
  for (const auto& d : prepared.dropped) fields.push_back(d.field + ": " + d.reason);
  CHECK(fields ==
        std::vector<std::string>{"phone: invalid_phone", "date_of_birth: invalid_date", "country: unknown_country"});
  CHECK(prepared.match_keys == std::vector<std::string>{"email"});
}

TEST_CASE("meta: appsecret_proof is hex HMAC-SHA256(app_secret, access_token)") {
  CHECK(meta_appsecret_proof("shhh-app-secret", "EAAB-test-token") ==
        "92bc3a24652404524b039b32899ecad82b7b603cf9552dda1881574018c85be8");
  const meta_provider without{destination()};
  const auto e = event(minimal());
  CHECK_FALSE(json::parse(without.build_request(std::span{&e, 1}, now).body).contains("appsecret_proof"));
}

TEST_CASE("meta: validate") {
  const meta_provider p{destination()};
  CHECK(p.validate(event(json{{"currency", "EUR"}}), now) == "event_time: missing");
  CHECK_FALSE(p.validate(event(json{{"event_time", an_hour_ago}, {"currency", "euro"}}), now).has_value());  // dropped
  CHECK(p.validate(event(minimal(1767229200 + 11 * 60)), now)
            .value_or("")
            .starts_with("event_time is 11 minutes in the future"));
  CHECK_FALSE(p.validate(event(minimal(1767229200 + 9 * 60)), now).has_value());  // clock skew allowance

  const std::int64_t now_s = 1767229200;
  CHECK_FALSE(p.validate(event(minimal(now_s - 7 * 86400)), now).has_value());
  CHECK(p.validate(event(minimal(now_s - 7 * 86400 - 1)), now) ==
        "event_time is more than 7 days old; Meta rejects events older than 7 days");
  CHECK(p.validate(event(minimal(now_s - 10 * 86400 - 5)), now) ==
        "event_time is 10 days old; Meta rejects events older than 7 days");
  json store = minimal(now_s - 30 * 86400);
  store["action_source"] = "physical_store";
  CHECK_FALSE(p.validate(event(store), now).has_value());
  store["event_time"] = now_s - 63 * 86400;
  CHECK(p.validate(event(store), now) ==
        "event_time is 63 days old; Meta rejects events older than 62 days for action_source physical_store");

  json web = minimal();
  web["action_source"] = "website";
  CHECK(p.validate(event(web), now) == "event_source_url: required by Meta when action_source is website");
  web["event_source_url"] = "https://example.com/";
  CHECK(p.validate(event(web), now) ==
        "user_agent: required by Meta (client_user_agent) when action_source is website");
  web["user_agent"] = "UA";
  CHECK_FALSE(p.validate(event(web), now).has_value());
}

TEST_CASE("meta: build_request refuses an event validate() refuses") {
  const meta_provider p{destination()};
  const auto e = event(json{{"value", 1}});
  CHECK_THROWS_AS((void)p.build_request(std::span{&e, 1}, now), std::invalid_argument);
}

TEST_CASE("meta: parse_meta_error") {
  const auto e = parse_meta_error(envelope(100, 2804019, false, "The event_time is too old"));
  REQUIRE(e.has_value());
  CHECK(e->code == 100);
  CHECK(e->subcode == 2804019);
  CHECK_FALSE(e->is_transient);
  CHECK(e->message == "Invalid parameter");
  CHECK(e->type == "OAuthException");
  CHECK(e->user_title == "Invalid event");
  CHECK(e->user_msg == "The event_time is too old");
  CHECK(e->fbtrace_id == "AbC123");
  CHECK(meta_error_text(*e) ==
        "Meta error 100 (subcode 2804019): Invalid event: The event_time is too old [fbtrace_id AbC123]");
  CHECK(meta_error_text(*parse_meta_error(envelope(613))) == "Meta error 613: Invalid parameter [fbtrace_id AbC123]");
  CHECK_FALSE(parse_meta_error(R"({"events_received": 1})"));
  CHECK_FALSE(parse_meta_error("<html>bad gateway</html>"));
  CHECK_FALSE(parse_meta_error(R"({"error": "nope"})"));
  CHECK_FALSE(parse_meta_error(R"({"error": {"message": "no code"}})"));
}

TEST_CASE("meta: error classification table") {
  struct row {
    int code;
    std::optional<int> subcode;
    bool transient;
    int status;
    meta_error_action expected;
  };
  const std::vector<row> table{
      {1, {}, false, 400, meta_error_action::retry},
      {2, {}, false, 503, meta_error_action::retry},
      {4, {}, false, 400, meta_error_action::retry},
      {17, {}, false, 400, meta_error_action::retry},
      {32, {}, false, 400, meta_error_action::retry},
      {341, {}, false, 400, meta_error_action::retry},
      {368, {}, false, 400, meta_error_action::retry},
      {613, {}, false, 400, meta_error_action::retry},
      {100, {}, true, 400, meta_error_action::retry},  // is_transient wins
      {999, {}, false, 500, meta_error_action::retry},
      {999, {}, false, 429, meta_error_action::retry},
      {190, {}, false, 400, meta_error_action::pause_destination},
      {190, 463, false, 401, meta_error_action::pause_destination},
      {102, {}, false, 400, meta_error_action::pause_destination},
      {104, {}, false, 400, meta_error_action::pause_destination},
      {3, {}, false, 400, meta_error_action::pause_destination},
      {10, {}, false, 403, meta_error_action::pause_destination},
      {200, {}, false, 403, meta_error_action::pause_destination},
      {270, {}, false, 400, meta_error_action::pause_destination},
      {299, {}, false, 400, meta_error_action::pause_destination},
      {100, 33, false, 400, meta_error_action::pause_destination},
      {100, {}, false, 400, meta_error_action::reject_batch},
      {100, 2804019, false, 400, meta_error_action::reject_batch},
      {300, {}, false, 400, meta_error_action::reject_batch},
      {999, {}, false, 400, meta_error_action::reject_batch},
  };
  for (const auto& r : table) {
    CAPTURE(r.code);
    CAPTURE(r.status);
    meta_error e;
    e.code = r.code;
    e.subcode = r.subcode;
    e.is_transient = r.transient;
    CHECK(meta_error_action_for(e, r.status) == r.expected);
  }
}

TEST_CASE("meta: classify success") {
  const meta_provider p{destination()};
  const auto events = test_batch(3, minimal());
  const auto out = p.classify(events, reply(200, R"({"events_received":3,"messages":[],"fbtrace_id":"x"})"),
                              outbox::test::provider_test_now);
  REQUIRE(out.events.size() == 3);
  CHECK_FALSE(out.pause_destination.has_value());
  for (const auto& e : out.events) {
    CHECK(e.kind == outcome_kind::delivered);
    CHECK_FALSE(e.resend_alone);
  }
}

TEST_CASE("meta: classify code 100 splits a batch and kills a single event with Meta's message") {
  const meta_provider p{destination()};
  const auto body = envelope(100, 2804019, false, "Event at index 1: event_time is required");
  const auto events = test_batch(3, minimal());
  const auto split = p.classify(events, reply(400, body), outbox::test::provider_test_now);
  REQUIRE(split.events.size() == 3);
  CHECK_FALSE(split.pause_destination.has_value());
  for (const auto& e : split.events) {
    CHECK(e.resend_alone);
    CHECK(e.kind == outcome_kind::retry);
    CHECK(e.error.find("resending each event alone") != std::string::npos);
  }

  const auto single = p.classify(std::span{events.data(), 1}, reply(400, body), outbox::test::provider_test_now);
  REQUIRE(single.events.size() == 1);
  CHECK(single.events[0].kind == outcome_kind::dead);
  CHECK_FALSE(single.events[0].resend_alone);
  CHECK(single.events[0].error ==
        "Meta error 100 (subcode 2804019): Invalid event: Event at index 1: event_time is required "
        "[fbtrace_id AbC123]");
  // Without error_user_msg, Meta's message.
  const auto plain =
      p.classify(std::span{events.data(), 1}, reply(400, envelope(100)), outbox::test::provider_test_now);
  CHECK(plain.events[0].error == "Meta error 100: Invalid parameter [fbtrace_id AbC123]");
}

TEST_CASE("meta: classify token and permission errors pause the destination") {
  const meta_provider p{destination()};
  const auto events = test_batch(2, minimal());
  for (const int code : {190, 102, 10, 200, 294}) {
    CAPTURE(code);
    const auto out = p.classify(events, reply(400, envelope(code)), outbox::test::provider_test_now);
    REQUIRE(out.pause_destination.has_value());
    CHECK(out.pause_destination->find("Meta error " + std::to_string(code)) != std::string::npos);
    REQUIRE(out.events.size() == 2);
    for (const auto& e : out.events) {
      CHECK(e.kind == outcome_kind::retry);
      CHECK_FALSE(e.resend_alone);
    }
  }
  CHECK(p.classify(events, reply(400, envelope(190)), outbox::test::provider_test_now)
            .pause_destination->starts_with("Meta refused the access token (fix access_token): Meta error 190"));
  CHECK(p.classify(events, reply(400, envelope(100, 33)), outbox::test::provider_test_now)
            .pause_destination->starts_with("Meta cannot reach pixel 1234567890"));
  const auto proof = json{{"error",
                           {{"message", "Invalid appsecret_proof provided in the API argument"},
                            {"type", "GraphMethodException"},
                            {"code", 100}}}};
  CHECK(p.classify(events, reply(400, proof.dump()), outbox::test::provider_test_now)
            .pause_destination->starts_with("Meta refused the appsecret_proof (check app_secret)"));
}

TEST_CASE("meta: classify transient errors, 5xx, 429 and transport failures as retry") {
  const meta_provider p{destination()};
  const auto events = test_batch(2, minimal());
  for (const int code : {1, 2, 4, 17, 341, 613}) {
    CAPTURE(code);
    const auto out = p.classify(events, reply(400, envelope(code)), outbox::test::provider_test_now);
    CHECK_FALSE(out.pause_destination.has_value());
    for (const auto& e : out.events) {
      CHECK(e.kind == outcome_kind::retry);
      CHECK_FALSE(e.resend_alone);
    }
  }
  const auto transient = p.classify(events, reply(400, envelope(100, {}, true)), outbox::test::provider_test_now);
  CHECK(transient.events[0].kind == outcome_kind::retry);
  CHECK_FALSE(transient.events[0].resend_alone);

  const auto throttled =
      p.classify(events, reply(429, envelope(4), {{"retry-after", "30"}}), outbox::test::provider_test_now);
  CHECK(throttled.events[0].kind == outcome_kind::retry);
  CHECK(throttled.events[0].retry_after == std::chrono::seconds{30});

  const auto gateway = p.classify(events, reply(502, "<html>Bad Gateway</html>"), outbox::test::provider_test_now);
  CHECK(gateway.events[0].kind == outcome_kind::retry);
  CHECK(gateway.events[0].error.starts_with("HTTP 502"));

  http_result timeout;
  timeout.error = transport_error::timeout;
  timeout.error_message = "read deadline";
  const auto t = p.classify(events, timeout, outbox::test::provider_test_now);
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[0].kind == outcome_kind::retry);
  CHECK(t.events[0].error.starts_with("timeout"));

  // No envelope: the generic HTTP rules.
  const auto unauthorized = p.classify(events, reply(401, "nope"), outbox::test::provider_test_now);
  CHECK(unauthorized.pause_destination.has_value());
  const auto bad = p.classify(events, reply(400, "nope"), outbox::test::provider_test_now);
  CHECK(bad.events[0].kind == outcome_kind::dead);
}

TEST_CASE("meta: settings validation") {
  using settings = std::map<std::string, std::string>;
  CHECK(validate_meta_settings(settings{{"pixel_id", "123"}, {"access_token", "t"}}).empty());
  const auto all = validate_meta_settings(settings{{"pixel_id", "123"},
                                                   {"access_token", "t"},
                                                   {"app_secret", "s"},
                                                   {"api_version", "v25.0"},
                                                   {"base_url", "https://localhost:8443/"},
                                                   {"test_event_code", "TEST123"},
                                                   {"batch_size", "1000"},
                                                   {"default_phone_country_code", "+44"},
                                                   {"on_expired_lease", "hold"},
                                                   {"lead_event_source", "Acme CRM"}});
  CHECK(all.empty());

  const auto missing = validate_meta_settings(settings{});
  CHECK(problem_for(missing, "pixel_id").starts_with("is required"));
  CHECK(problem_for(missing, "access_token").starts_with("is required"));

  const auto bad = validate_meta_settings(settings{{"pixel_id", "px-12"},
                                                   {"access_token", "secret token"},
                                                   {"app_secret", "secret\tvalue"},
                                                   {"api_version", "25"},
                                                   {"base_url", "graph.facebook.com"},
                                                   {"batch_size", "1001"},
                                                   {"default_phone_country_code", "0044"},
                                                   {"on_expired_lease", "skip"}});
  CHECK(problem_for(bad, "pixel_id") == "must contain only digits (got \"px-12\")");
  CHECK(problem_for(bad, "access_token") == "must not contain spaces or control characters");
  CHECK(problem_for(bad, "app_secret") == "must not contain spaces or control characters");
  CHECK(problem_for(bad, "api_version") == "must look like v25.0 (got \"25\")");
  CHECK(problem_for(bad, "base_url").starts_with("must start with https://"));
  CHECK(problem_for(bad, "batch_size") == "must be a whole number from 1 to 1000 (got \"1001\")");
  CHECK(problem_for(bad, "default_phone_country_code").starts_with("must be a country calling code"));
  CHECK(problem_for(bad, "on_expired_lease") == "must be resend or hold (got \"skip\")");
  for (const auto& [key, problem] : bad) {
    CHECK(problem.find("secret") == std::string::npos);  // never echoed
  }
  CHECK(problem_for(validate_meta_settings(settings{{"pixel_id", "1"}, {"access_token", "t"}, {"batch_size", "0"}}),
                    "batch_size")
            .starts_with("must be a whole number"));
}

TEST_CASE("meta: make_meta_destination defaults and parsing") {
  const auto d = make_meta_destination({{"pixel_id", "123"}, {"access_token", "t"}});
  CHECK(d.api_version == "v27.0");
  CHECK(d.base_url == "https://graph.facebook.com");
  CHECK(d.batch_size == 500);
  CHECK_FALSE(d.hold_reclaimed);
  CHECK(d.lead_event_source == "outbox-dispatcher");
  CHECK(d.default_phone_country_code.empty());
  const auto e = make_meta_destination({{"pixel_id", "123"},
                                        {"access_token", "t"},
                                        {"base_url", "https://localhost:1/"},
                                        {"batch_size", "25"},
                                        {"default_phone_country_code", "+44"},
                                        {"on_expired_lease", "hold"}});
  CHECK(e.base_url == "https://localhost:1");
  CHECK(e.batch_size == 25);
  CHECK(e.default_phone_country_code == "44");
  CHECK(e.hold_reclaimed);
  const meta_provider p{e};
  CHECK(p.kind() == "meta");
  CHECK(p.max_batch_size() == 25);
  CHECK(p.hold_reclaimed());
  CHECK_FALSE(meta_provider{d}.hold_reclaimed());
}

TEST_CASE("meta: the configuration accepts a meta destination and masks its secrets") {
  const outbox::environment env{{"OUTBOX_DEST__META__MAIN__PIXEL_ID", "1234567890"},
                                {"OUTBOX_DEST__META__MAIN__ACCESS_TOKEN", "EAAB-super-secret"},
                                {"OUTBOX_DEST__META__MAIN__APP_SECRET", "app-super-secret"},
                                {"OUTBOX_DEST__META__MAIN__ON_EXPIRED_LEASE", "hold"},
                                {"OUTBOX_METRICS_ADDRESS", ""}};
  const auto cfg = outbox::load_config(env);
  const auto* d = cfg.find_destination("meta", "main");
  REQUIRE(d != nullptr);
  CHECK(d->setting("pixel_id") == "1234567890");
  const auto text = outbox::describe(cfg);
  CHECK(text.find("super-secret") == std::string::npos);
  CHECK(text.find("OUTBOX_DEST__META__MAIN__ACCESS_TOKEN=***") != std::string::npos);

  try {
    (void)outbox::load_config(
        {{"OUTBOX_DEST__META__MAIN__PIXEL_ID", "abc"}, {"OUTBOX_DEST__META__MAIN__ACCES_TOKEN", "EAAB-super-secret"}});
    FAIL("expected a config_error");
  } catch (const outbox::config_error& e) {
    const std::string what = e.what();
    CHECK(what.find("OUTBOX_DEST__META__MAIN__PIXEL_ID: must contain only digits") != std::string::npos);
    CHECK(what.find("OUTBOX_DEST__META__MAIN__ACCES_TOKEN: unknown setting") != std::string::npos);
    CHECK(what.find("OUTBOX_DEST__META__MAIN__ACCESS_TOKEN: is required") != std::string::npos);
    CHECK(what.find("super-secret") == std::string::npos);
  }
}

}  // namespace meta_provider_test

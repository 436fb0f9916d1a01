#include "providers/webhook/webhook_provider.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "providers/crypto.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace webhook_provider_test {

using namespace outbox::providers;
using namespace outbox::test;
using namespace std::chrono_literals;
using std::chrono::system_clock;

namespace {

// The Standard Webhooks test vector (reference libraries' "sign function works" test).
constexpr std::string_view vector_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::string_view vector_id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr std::int64_t vector_timestamp = 1614265330;
constexpr std::string_view vector_body = R"({"test": 2432232314})";
constexpr std::string_view vector_signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

const system_clock::time_point t0 = system_clock::time_point{} + std::chrono::seconds{vector_timestamp};

outbound_event event(std::string key = "msg_p5jXN8AQM9LWM0D4loKWxJek", std::int32_t attempt = 1) {
  outbound_event e;
  e.row_id = 42;
  e.idempotency_key = std::move(key);
  e.event_name = "Lead";
  e.lead_project_id = 7;
  e.payload =
      nlohmann::json{{"test", 2432232314LL}, {"event_name", "Lead"}, {"value", 12.5}, {"nested", {{"b", 1}, {"a", 2}}}};
  e.attempt = attempt;
  return e;
}

std::vector<std::string> all_headers(const http_request& r, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& [n, v] : r.headers) {
    if (n == name) values.push_back(v);
  }
  return values;
}

}  // namespace

TEST_CASE("Standard Webhooks reference vector") {
  const auto key = webhook_signing_key(vector_secret);
  REQUIRE(key.has_value());
  CHECK(key->size() == 24);
  CHECK(standard_webhooks_signature(*key, vector_id, vector_timestamp, vector_body) == vector_signature);
  // Any change to id, timestamp or body changes the signature.
  CHECK(standard_webhooks_signature(*key, "msg_other", vector_timestamp, vector_body) != vector_signature);
  CHECK(standard_webhooks_signature(*key, vector_id, vector_timestamp + 1, vector_body) != vector_signature);
  CHECK(standard_webhooks_signature(*key, vector_id, vector_timestamp, R"({"test":2432232314})") != vector_signature);
}

TEST_CASE("webhook_signing_key: whsec_ is base64, anything else raw bytes") {
  CHECK(webhook_signing_key("whsec_aGVsbG8=") == std::optional<std::string>{"hello"});
  CHECK(webhook_signing_key("my passphrase") == std::optional<std::string>{"my passphrase"});
  // Without the prefix the text is not decoded, even if it looks like base64.
  CHECK(webhook_signing_key("aGVsbG8=") == std::optional<std::string>{"aGVsbG8="});
  CHECK_FALSE(webhook_signing_key("whsec_not base64!").has_value());
}

TEST_CASE("webhook provider basics") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", "", {}}};
  CHECK(p.kind() == "webhook");
  CHECK(p.max_batch_size() == 1);
  CHECK_FALSE(p.validate(event(), t0).has_value());
}

TEST_CASE("build_request signs per Standard Webhooks") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", std::string{vector_secret}, {}}};
  const auto e = event();
  const http_request r = p.build_request({&e, 1}, t0);

  CHECK(r.method == "POST");
  CHECK(r.url == "https://example.com/hook");
  CHECK(r.body == e.payload.dump());
  CHECK(header_of(r, "content-type") == std::optional<std::string>{"application/json"});
  CHECK(header_of(r, "webhook-id") == std::optional<std::string>{e.idempotency_key});
  CHECK(header_of(r, "webhook-timestamp") == std::optional<std::string>{"1614265330"});
  CHECK(header_of(r, "idempotency-key") == std::optional<std::string>{e.idempotency_key});

  // Recompute independently: HMAC-SHA256(base64-decoded secret, id.timestamp.body).
  const auto key = base64_decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  REQUIRE(key.has_value());
  const std::string expected = "v1," + base64_encode(hmac_sha256(*key, e.idempotency_key + ".1614265330." + r.body));
  CHECK(header_of(r, "webhook-signature") == std::optional<std::string>{expected});
}

TEST_CASE("a row's stored payload text is the body, byte for byte, and is what gets signed") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", std::string{vector_secret}, {}}};
  outbound_event e = event("key-1");
  e.payload_text = R"({"a": 1, "nested": {"b": [1, 2]}})";  // PostgreSQL's jsonb output style
  e.payload = nlohmann::json::parse(e.payload_text);
  CHECK_FALSE(p.validate(e, t0).has_value());
  const http_request r = p.build_request({&e, 1}, t0);
  CHECK(r.body == e.payload_text);
  const auto key = base64_decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  REQUIRE(key.has_value());
  CHECK(header_of(r, "webhook-signature") ==
        std::optional<std::string>{"v1," + base64_encode(hmac_sha256(*key, "key-1.1614265330." + e.payload_text))});
}

TEST_CASE("a stored payload text that was never parsed is sent as is; one that is no object is refused") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", std::string{vector_secret}, {}}};
  CHECK_FALSE(p.reads_payload());
  outbound_event e = event("key-1");
  e.payload = nullptr;  // the engine skips the parse for this provider
  e.payload_text = R"({"a": 1})";
  CHECK_FALSE(p.validate(e, t0).has_value());
  CHECK(p.build_request({&e, 1}, t0).body == e.payload_text);
  e.payload_text = "[1, 2]";
  CHECK(p.validate(e, t0) == std::optional<std::string>{"payload is not a JSON object"});
  e.payload_text = "{\"name\": \"caf\xE9\"}";  // Latin-1, as a SQL_ASCII database may store it
  CHECK(p.validate(e, t0) == std::optional<std::string>{"payload contains a string that is not valid UTF-8"});
  e.payload_text = "{\"name\": \"caf\xC3\xA9\"}";
  CHECK_FALSE(p.validate(e, t0).has_value());
}

TEST_CASE("a raw (non-whsec) secret signs with its own bytes") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", "passphrase", {}}};
  outbound_event e = event("key-1");
  e.payload = nlohmann::json{{"a", 1}};
  const auto t = system_clock::time_point{} + 1700000000s;
  const http_request r = p.build_request({&e, 1}, t);
  CHECK(r.body == R"({"a":1})");
  // Computed with Python's hmac module.
  CHECK(header_of(r, "webhook-signature") ==
        std::optional<std::string>{"v1,xJK1TZRHSMm4QaPbuz8LpDmHQwjbUoHWWoj20Hlc/l0="});
}

TEST_CASE("the body is compact and byte-identical on every attempt") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", std::string{vector_secret}, {}}};
  const auto first = event("key-1", 1);
  const auto later = event("key-1", 5);
  const http_request r1 = p.build_request({&first, 1}, t0);
  const http_request r2 = p.build_request({&later, 1}, t0 + 3h + 250ms);

  CHECK(r1.body == R"({"event_name":"Lead","nested":{"a":2,"b":1},"test":2432232314,"value":12.5})");
  CHECK(r1.body == r2.body);
  CHECK(header_of(r1, "webhook-id") == header_of(r2, "webhook-id"));
  CHECK(header_of(r1, "idempotency-key") == header_of(r2, "idempotency-key"));
  // The timestamp and so the signature are per attempt.
  CHECK(header_of(r2, "webhook-timestamp") == std::optional<std::string>{std::to_string(vector_timestamp + 3 * 3600)});
  CHECK(header_of(r1, "webhook-signature") != header_of(r2, "webhook-signature"));
  // Same attempt time, same request: fully deterministic.
  CHECK(p.build_request({&first, 1}, t0).headers == r1.headers);
}

TEST_CASE("no secret, no signature header") {
  const webhook_provider p{webhook_destination{"http://hooks.internal/x", "", {}}};
  const auto e = event();
  const http_request r = p.build_request({&e, 1}, t0);
  CHECK_FALSE(header_of(r, "webhook-signature").has_value());
  CHECK(header_of(r, "webhook-id").has_value());
  CHECK(header_of(r, "webhook-timestamp").has_value());
  CHECK(header_of(r, "idempotency-key").has_value());
}

TEST_CASE("extra headers are sent but cannot override ours") {
  const webhook_provider p{webhook_destination{"https://example.com/hook",
                                               "s3cret",
                                               {{"x-foo", "bar"},
                                                {"Webhook-Signature", "forged"},
                                                {"idempotency-key", "other"},
                                                {"authorization", "Bearer t"}}}};
  const auto e = event();
  const http_request r = p.build_request({&e, 1}, t0);
  CHECK(header_of(r, "x-foo") == std::optional<std::string>{"bar"});
  CHECK(header_of(r, "authorization") == std::optional<std::string>{"Bearer t"});
  CHECK(all_headers(r, "webhook-signature").size() == 1);
  CHECK(header_of(r, "webhook-signature") != std::optional<std::string>{"forged"});
  CHECK(all_headers(r, "Webhook-Signature").empty());
  CHECK(all_headers(r, "idempotency-key") == std::vector<std::string>{e.idempotency_key});
}

TEST_CASE("build_request takes exactly one event") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", "", {}}};
  const std::vector<outbound_event> two{event("a"), event("b")};
  CHECK_THROWS_AS((void)p.build_request(two, t0), std::logic_error);
  CHECK_THROWS_AS((void)p.build_request({}, t0), std::logic_error);
}

TEST_CASE("validate rejects events that cannot be signed or sent") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", "", {}}};
  CHECK_FALSE(p.validate(event("0f8fad5b-d9cb-469f-a165-70867728950e"), t0).has_value());
  CHECK(p.validate(event(""), t0).has_value());
  CHECK(p.validate(event("a.b"), t0).has_value());  // '.' separates the signed fields
  CHECK(p.validate(event("a b"), t0).has_value());
  CHECK(p.validate(event("a\r\nx-evil: 1"), t0).has_value());  // header injection
  auto not_object = event();
  not_object.payload = nlohmann::json::array({1, 2});
  CHECK(p.validate(not_object, t0).has_value());
  auto bad_utf8 = event();
  bad_utf8.payload = nlohmann::json{{"name", "\xff\xfe"}};
  const auto error = p.validate(bad_utf8, t0);
  REQUIRE(error.has_value());
  CHECK(error->find("UTF-8") != std::string::npos);
  // build_request stays total even if called anyway.
  CHECK_NOTHROW((void)p.build_request({&bad_utf8, 1}, t0));
}

TEST_CASE("classify uses the generic HTTP outcome") {
  const webhook_provider p{webhook_destination{"https://example.com/hook", "", {}}};
  const auto e = event();
  const auto ok = p.classify({&e, 1}, reply(204), outbox::test::provider_test_now);
  REQUIRE(ok.events.size() == 1);
  CHECK(ok.events[0].kind == outcome_kind::delivered);

  const auto busy = p.classify({&e, 1}, reply(503, "later"), outbox::test::provider_test_now);
  CHECK(busy.events[0].kind == outcome_kind::retry);
  CHECK(busy.events[0].error == "HTTP 503: later");

  const auto gone = p.classify({&e, 1}, reply(404, "no such hook"), outbox::test::provider_test_now);
  CHECK(gone.events[0].kind == outcome_kind::dead);

  const auto denied = p.classify({&e, 1}, reply(401, "bad signature"), outbox::test::provider_test_now);
  CHECK(denied.pause_destination.has_value());
  CHECK(denied.events[0].kind == outcome_kind::retry);
}

TEST_CASE("a malformed whsec_ secret is refused at construction") {
  CHECK_THROWS_AS(webhook_provider(webhook_destination{"https://example.com/hook", "whsec_%%%", {}}),
                  std::invalid_argument);
}

TEST_CASE("validate_webhook_settings") {
  using settings = std::map<std::string, std::string>;
  const auto keys_of = [](const auto& problems) {
    std::vector<std::string> keys;
    for (const auto& [k, m] : problems) keys.push_back(k);
    return keys;
  };
  CHECK(validate_webhook_settings(settings{{"url", "https://example.com/hook"}}).empty());
  CHECK(validate_webhook_settings(settings{{"url", "http://10.0.0.1:8080/x?y=1"}, {"secret", "plain"}}).empty());
  CHECK(validate_webhook_settings(settings{{"url", "HTTPS://Example.com"}, {"secret", std::string{vector_secret}}})
            .empty());

  CHECK(keys_of(validate_webhook_settings(settings{})) == std::vector<std::string>{"url"});
  CHECK(keys_of(validate_webhook_settings(settings{{"url", "ftp://example.com"}})) == std::vector<std::string>{"url"});
  CHECK(keys_of(validate_webhook_settings(settings{{"url", "example.com/hook"}})) == std::vector<std::string>{"url"});
  CHECK(keys_of(validate_webhook_settings(settings{{"url", "https:///path"}})) == std::vector<std::string>{"url"});
  CHECK(keys_of(validate_webhook_settings(settings{{"url", "https://a b"}})) == std::vector<std::string>{"url"});

  const auto bad_secret = validate_webhook_settings(settings{{"url", "https://x"}, {"secret", "whsec_!!hunter2!!"}});
  REQUIRE(bad_secret.size() == 1);
  CHECK(bad_secret[0].first == "secret");
  CHECK(bad_secret[0].second.find("hunter2") == std::string::npos);
  CHECK(keys_of(validate_webhook_settings(settings{{"url", "https://x"}, {"secret", "whsec_"}})) ==
        std::vector<std::string>{"secret"});
}

TEST_CASE("make_webhook_destination copies settings and headers") {
  const auto d = make_webhook_destination({{"url", "https://x/y"}, {"secret", "s"}}, {{"x-a", "1"}});
  CHECK(d.url == "https://x/y");
  CHECK(d.secret == "s");
  CHECK(d.extra_headers == header_list{{"x-a", "1"}});
}

}  // namespace webhook_provider_test

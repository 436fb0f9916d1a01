// The provider conformance suite: one table of cases that every provider
// passes, as river's riverdrivertest does for its drivers. A provider states
// what is its own (a valid payload, where its dedup id travels, its error
// envelope, its time window); the cases are the same for all: required
// fields, dropped fields, lists, the dedup id, the batch limit, the answers
// 200/401/403/429/5xx and a transport failure, and the time window.
// Platform-specific rules stay in each provider's own test file.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "providers/crypto.hpp"
#include "providers/google/google_ads_provider.hpp"
#include "providers/google/google_data_manager_provider.hpp"
#include "providers/meta/meta_provider.hpp"
#include "providers/tiktok/tiktok_provider.hpp"
#include "providers/webhook/webhook_provider.hpp"
#include "tests/support/fake_google_wire.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace provider_conformance_test {

using namespace outbox::providers;
using namespace outbox::test;
using nlohmann::json;
using std::chrono::days;
using std::chrono::minutes;

namespace {

constexpr std::int64_t now_s = 1767229200;  // provider_test_now
constexpr std::int64_t an_hour_ago = now_s - 3600;

// What one provider brings to the suite.
struct provider_case {
  std::string name;
  std::shared_ptr<const provider> p;
  json minimal;  // the smallest payload the provider sends (event_time an hour ago)
  // A payload without a field the provider requires, and the start of the
  // error naming it; nullopt when the provider requires no payload field.
  std::optional<std::pair<json, std::string>> missing_required;
  bool drops_unusable = true;  // false: the payload goes as it is (webhook)
  // The dedup id of each event of a request, in request order.
  std::function<std::vector<std::string>(const http_request&)> dedup_ids;
  // The body of an accepted request of `n` events.
  std::function<std::string(std::size_t n)> success_body;
  // The provider's own error envelope for an HTTP status.
  std::function<std::string(int status)> error_body;
  std::optional<days> oldest;     // events older than this are refused before sending
  std::optional<minutes> future;  // events further ahead than this are refused
  // A field each event of one request must have its own value of (Google Ads
  // takes one conversion per click in a request and holds back repeats).
  const char* per_event_field = nullptr;
};

json with(json payload, const json& more) {
  payload.update(more);
  return payload;
}

std::vector<std::string> ids_at(const http_request& r, const char* list, const char* field) {
  const auto body = json::parse(r.body);
  std::vector<std::string> ids;
  for (const auto& e : body.at(list)) ids.push_back(e.at(field).get<std::string>());
  return ids;
}

std::string meta_error(int status) {
  const int code = status == 401 ? 190 : status == 403 ? 10 : status == 429 ? 4 : 2;
  return json{{"error", {{"message", "error"}, {"type", "OAuthException"}, {"code", code}, {"fbtrace_id", "T"}}}}
      .dump();
}

std::string tiktok_body(long long code) {
  return json{
      {"code", code}, {"message", code == 0 ? "OK" : "error"}, {"request_id", "req-1"}, {"data", json::object()}}
      .dump();
}

std::string tiktok_error(int status) {
  return tiktok_body(status == 401 ? 40105 : status == 403 ? 40102 : status == 429 ? 40100 : 50000);
}

std::string google_error(int status) {
  const char* name = status == 401   ? "UNAUTHENTICATED"
                     : status == 403 ? "PERMISSION_DENIED"
                     : status == 429 ? "RESOURCE_EXHAUSTED"
                                     : "UNAVAILABLE";
  return json{{"error", {{"code", status}, {"status", name}, {"message", "error"}}}}.dump();
}

std::string google_ads_success(std::size_t n) {
  json results = json::array();
  for (std::size_t i = 0; i < n; ++i) results.push_back(json{{"gclid", "G"}});
  return json{{"results", results}}.dump();
}

provider_case meta_case() {
  meta_destination d;
  d.pixel_id = "1234567890";
  d.access_token = "EAAB-test-token";
  return {"meta",
          std::make_shared<meta_provider>(d),
          json{{"event_time", an_hour_ago}, {"email", "a@b.c"}},
          std::pair{json{{"email", "a@b.c"}}, std::string{"event_time: missing"}},
          true,
          [](const http_request& r) { return ids_at(r, "data", "event_id"); },
          [](std::size_t n) {
            return json{{"events_received", n}, {"fbtrace_id", "T"}}.dump();
          },
          meta_error,
          days{7},
          minutes{10}};
}

provider_case tiktok_case() {
  tiktok_destination d;
  d.access_token = "tt-test-token";
  d.event_source_id = "CRM123EVENTSET";
  return {"tiktok",
          std::make_shared<tiktok_provider>(d),
          json{{"event_time", an_hour_ago}, {"email", "a@b.c"}},
          std::pair{json{{"email", "a@b.c"}}, std::string{"event_time: missing"}},
          true,
          [](const http_request& r) { return ids_at(r, "data", "event_id"); },
          [](std::size_t) { return tiktok_body(0); },
          tiktok_error,
          days{28},
          minutes{5}};
}

provider_case google_ads_case() {
  return {"google_ads",
          std::make_shared<google_ads_provider>(make_google_ads_destination(good_google_settings("customer_id"), {})),
          json{{"event_time", an_hour_ago}, {"gclid", "Cj0KCQjw-abc_123"}},
          std::pair{json{{"event_time", an_hour_ago}}, std::string{"gclid:"}},
          true,
          [](const http_request& r) { return ids_at(r, "conversions", "orderId"); },
          google_ads_success,
          google_error,
          std::nullopt,
          std::nullopt,
          "gclid"};
}

provider_case google_data_manager_case() {
  return {"google_data_manager",
          std::make_shared<google_data_manager_provider>(
              make_google_data_manager_destination(good_google_settings("account_id"), {})),
          json{{"event_time", an_hour_ago}, {"gclid", "Cj0KCQjw-abc_123"}},
          std::pair{json{{"event_time", an_hour_ago}}, std::string{"gclid:"}},
          true,
          [](const http_request& r) { return ids_at(r, "events", "transactionId"); },
          [](std::size_t) { return std::string{R"({"requestId":"r-1"})"}; },
          google_error,
          std::nullopt,
          std::nullopt,
          "gclid"};
}

provider_case webhook_case() {
  return {"webhook",
          std::make_shared<webhook_provider>(
              webhook_destination{"https://example.com/hook", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", {}}),
          json{{"event_name", "Lead"}, {"value", 1}},
          std::nullopt,
          false,
          [](const http_request& r) { return std::vector<std::string>{header_of(r, "webhook-id").value_or("")}; },
          [](std::size_t) { return std::string{}; },
          [](int) { return std::string{"error"}; },
          std::nullopt,
          std::nullopt};
}

std::vector<provider_case> every_provider() {
  return {meta_case(), tiktok_case(), google_ads_case(), google_data_manager_case(), webhook_case()};
}

// `n` rows of the minimal payload, keys key-0..; per_event_field made distinct.
std::vector<outbound_event> batch_of(const provider_case& c, std::size_t n) {
  auto events = test_batch(n, c.minimal);
  if (c.per_event_field != nullptr) {
    for (std::size_t i = 0; i < n; ++i) {
      events[i].payload[c.per_event_field] = c.minimal.at(c.per_event_field).get<std::string>() + std::to_string(i);
    }
  }
  return events;
}

std::optional<std::string> problem(const provider_case& c, json payload) {
  return c.p->validate(test_event(std::move(payload)), provider_test_now);
}

std::vector<std::string> keys_of(const std::vector<outbound_event>& events) {
  std::vector<std::string> keys;
  for (const auto& e : events) keys.push_back(e.idempotency_key);
  return keys;
}

// Runs `check` once per provider, each a doctest SUBCASE named after it.
void for_each_provider(const std::function<void(const provider_case&)>& check) {
  for (const auto& c : every_provider()) {
    SUBCASE(c.name.c_str()) { check(c); }
  }
}

}  // namespace

TEST_CASE("conformance: the minimal payload is accepted and sent with the row's key as the dedup id") {
  for_each_provider([](const provider_case& c) {
    const auto events = batch_of(c, std::min<std::size_t>(3, c.p->max_batch_size()));
    for (const auto& e : events) REQUIRE_FALSE(c.p->validate(e, provider_test_now).has_value());
    const auto request = c.p->build_request(events, provider_test_now);
    if (c.name == "google_data_manager") outbox::test::fake_google_wire::keep_ingest_body(request.body);
    CHECK(request.method == "POST");
    CHECK(c.dedup_ids(request) == keys_of(events));
    // The same rows give the same body on every attempt, an hour later too.
    auto again = events;
    for (auto& e : again) e.attempt = 2;
    CHECK(c.p->build_request(again, provider_test_now + std::chrono::hours{1}).body == request.body);
  });
}

TEST_CASE("conformance: a missing required field makes the row dead before any request, naming the field") {
  for_each_provider([](const provider_case& c) {
    if (!c.missing_required) {
      CHECK_FALSE(problem(c, json::object()).has_value());  // nothing in the payload is required
      return;
    }
    const auto& [payload, error] = *c.missing_required;
    CHECK(problem(c, payload).value_or("").starts_with(error));
    const auto e = test_event(payload);
    CHECK_THROWS_AS((void)c.p->build_request(std::span{&e, 1}, provider_test_now), std::logic_error);
  });
}

TEST_CASE("conformance: a field the provider cannot use is dropped with its reason, and the row still goes") {
  for_each_provider([](const provider_case& c) {
    const auto payload = with(c.minimal, {{"currency", "euro"}, {"value", "lots"}});
    const auto prepared = c.p->prepare(test_event(payload), provider_test_now);
    REQUIRE_FALSE(prepared.error.has_value());
    if (!c.drops_unusable) {
      CHECK(prepared.dropped.empty());  // sent as the CRM wrote it
      return;
    }
    CHECK(dropped_reason(prepared, "currency") != "");
    CHECK(dropped_reason(prepared, "value") != "");
    const auto e = test_event(payload);
    const auto body = c.p->build_request(std::span{&e, 1}, provider_test_now).body;
    CHECK(body.find("euro") == std::string::npos);
    CHECK(body.find("lots") == std::string::npos);
  });
}

TEST_CASE("conformance: every value of a list reaches the request") {
  for_each_provider([](const provider_case& c) {
    const auto e = test_event(with(c.minimal, {{"email", {"ann@example.com", "bob@example.org"}}}));
    REQUIRE_FALSE(c.p->validate(e, provider_test_now).has_value());
    const auto body = c.p->build_request(std::span{&e, 1}, provider_test_now).body;
    if (c.name == "google_data_manager") outbox::test::fake_google_wire::keep_ingest_body(body);
    for (const char* email : {"ann@example.com", "bob@example.org"}) {
      CAPTURE(email);
      // Platforms send the SHA-256 of the normalized address; a webhook the payload itself.
      const bool found = body.find(sha256_hex(email)) != std::string::npos || body.find(email) != std::string::npos;
      CHECK(found);
    }
  });
}

TEST_CASE("conformance: a request holds 1..max_batch_size events, and one more is refused") {
  for_each_provider([](const provider_case& c) {
    const auto full = batch_of(c, c.p->max_batch_size());
    CHECK(c.dedup_ids(c.p->build_request(full, provider_test_now)).size() == full.size());
    const auto over = batch_of(c, c.p->max_batch_size() + 1);
    CHECK_THROWS_AS((void)c.p->build_request(over, provider_test_now), std::logic_error);
    CHECK_THROWS_AS((void)c.p->build_request({}, provider_test_now), std::logic_error);
  });
}

TEST_CASE("conformance: each answer gives one outcome per event, classified the same way everywhere") {
  for_each_provider([](const provider_case& c) {
    const auto events = batch_of(c, std::min<std::size_t>(2, c.p->max_batch_size()));
    const auto every = [&](const batch_outcome& out, outcome_kind kind) {
      REQUIRE(out.events.size() == events.size());
      return std::all_of(out.events.begin(), out.events.end(), [&](const auto& e) { return e.kind == kind; });
    };
    const auto accepted =
        c.p->classify(events, reply(200, c.success_body(events.size())), outbox::test::provider_test_now);
    CHECK(every(accepted, outcome_kind::delivered));
    CHECK_FALSE(accepted.pause_destination.has_value());

    // A refused token: refresh it (OAuth providers) or pause; never a dead row.
    const auto unauthorized = c.p->classify(events, reply(401, c.error_body(401)), outbox::test::provider_test_now);
    CHECK(every(unauthorized, outcome_kind::retry));
    CHECK((unauthorized.reauthenticate || unauthorized.pause_destination.has_value()));

    const auto forbidden = c.p->classify(events, reply(403, c.error_body(403)), outbox::test::provider_test_now);
    CHECK(every(forbidden, outcome_kind::retry));
    CHECK(forbidden.pause_destination.has_value());

    const auto throttled =
        c.p->classify(events, reply(429, c.error_body(429), {{"retry-after", "17"}}), outbox::test::provider_test_now);
    CHECK(every(throttled, outcome_kind::retry));
    CHECK_FALSE(throttled.pause_destination.has_value());
    CHECK(throttled.events[0].retry_after == std::chrono::seconds{17});

    for (const int status : {500, 502, 503, 504}) {
      CAPTURE(status);
      const auto down = c.p->classify(events, reply(status, c.error_body(status)), outbox::test::provider_test_now);
      CHECK(every(down, outcome_kind::retry));
      CHECK_FALSE(down.pause_destination.has_value());
      CHECK_FALSE(down.events[0].resend_alone);
    }
    for (const auto error : {transport_error::timeout, transport_error::connection_reset, transport_error::connect}) {
      CAPTURE(to_string(error));
      CHECK(
          every(c.p->classify(events, transport_failure(error), outbox::test::provider_test_now), outcome_kind::retry));
    }
  });
}

TEST_CASE("conformance: the time window is checked before sending, in both directions") {
  for_each_provider([](const provider_case& c) {
    const auto at = [&](std::int64_t t) { return problem(c, with(c.minimal, {{"event_time", t}})); };
    if (c.oldest) {
      const auto oldest_s = std::chrono::seconds{*c.oldest}.count();
      CHECK_FALSE(at(now_s - oldest_s).has_value());
      CHECK(at(now_s - oldest_s - 86400).value_or("").find("days old") != std::string::npos);
    } else {
      CHECK_FALSE(at(now_s - 400 * 86400).has_value());  // the platform judges the age itself
    }
    if (c.future) {
      const auto ahead_s = std::chrono::seconds{*c.future}.count();
      CHECK_FALSE(at(now_s + ahead_s - 60).has_value());
      CHECK(at(now_s + ahead_s + 3600).value_or("").find("in the future") != std::string::npos);
    }
  });
}

}  // namespace provider_conformance_test

// The two writers of one Meta entry (providers/meta/meta_event.cpp) must agree: the
// text the hot path writes parses to the document meta_event_json builds, with
// the same match keys and the same dropped fields.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "providers/meta/meta_provider.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace meta_event_test {

using namespace outbox::providers;
using nlohmann::json;

namespace {

outbound_event event_of(const json& payload) {
  outbound_event e;
  e.row_id = 9;
  e.idempotency_key = "key-\"9\"";
  e.event_name = "Lead";
  e.lead_project_id = 90;
  e.payload = payload;
  return e;
}

std::vector<json> payloads() {
  return {
      json::parse(R"j({"event_time": 1767225600, "email": "a@b.c"})j"),
      json::parse(R"j({
        "event_time": 1767225600, "value": 120.5, "currency": "eur", "order_id": "A-17",
        "email": [" Mary@Example.com ", "mary@example.com", "second@example.com"], "phone": "(650) 555-1212",
        "first_name": "Mary", "last_name": "Smith", "gender": "female", "city": "Menlo Park", "state": "CA",
        "zip": "94025-1234", "country": "US", "date_of_birth": "1990-05-26", "external_id": "CRM-42",
        "client_ip": "203.0.113.7", "user_agent": "Mozilla/5.0 (X11; \"quoted\")",
        "fbc": "fb.1.1554763741205.AbCd", "fbp": "fb.1.1558571054389.1098115397", "lead_id": "1234567890123456"})j"),
      json::parse(R"j({"event_time": 1767225600, "action_source": "website", "value": 100,
                      "event_source_url": "https://example.com/a?b=c&d=\u00e9", "user_agent": "UA",
                      "first_name": "Zo\u00eb", "last_name": "\u00d8rsted", "city": "K\u00f8benhavn",
                      "country": "Denmark", "lead_id": "L-9", "gender": "x", "date_of_birth": "not a date"})j"),
      json::parse(R"j({"event_time": 1767225600, "phone": "+44 20 7946 0958", "state": "Bavaria", "country": "DE",
                      "extra": {"tiktok": {"limited_data_use": true}}})j"),
      json::parse(R"j({"event_time": 1767225600, "email": "a@b.c",
                      "extra": {"meta": {"opt_out": true, "user_data": {"fbp": "fb.1.1.1"}, "event_id": "no"}}})j"),
  };
}

// The engine's clock on 2026-01-01 (the payloads' event time).
const std::chrono::system_clock::time_point now{std::chrono::seconds{1767225600}};

}  // namespace

TEST_CASE("meta entry: the text parses to meta_event_json's document, with the same match keys and drops") {
  meta_destination d;
  d.pixel_id = "1";
  d.access_token = "t";
  d.default_phone_country_code = "1";
  d.lead_event_source = "Caf\xC3\xA9 CRM";
  for (const json& payload : payloads()) {
    CAPTURE(payload.dump());
    const auto parsed = parse_canonical_event(payload);
    REQUIRE(std::holds_alternative<canonical_event>(parsed));
    const auto& c = std::get<canonical_event>(parsed);
    const outbound_event e = event_of(payload);
    dropped_fields dropped_by_document;
    const json document = meta_event_json(e, c, d, dropped_by_document, now);
    dropped_fields dropped_by_text;
    const meta_event_entry entry = meta_event_entry_for(e, c, d, dropped_by_text, now);
    CHECK(json::parse(entry.text) == document);
    CHECK(entry.match_keys == meta_match_keys(document));
    CHECK(dropped_by_text.size() == dropped_by_document.size());
    CHECK(json::parse(entry.text)["event_id"] == "key-\"9\"");  // never the one extra names
  }
}

TEST_CASE("meta entry: an empty custom_data is left out, an empty user_data is kept") {
  meta_destination d;
  d.pixel_id = "1";
  d.access_token = "t";
  // No user field, and not system_generated (which adds custom_data's event_source).
  const json payload = json::parse(R"j({"event_time": 1767225600, "action_source": "email"})j");
  const auto c = std::get<canonical_event>(parse_canonical_event(payload));
  dropped_fields dropped;
  const auto entry = meta_event_entry_for(event_of(payload), c, d, dropped, now);
  const json back = json::parse(entry.text);
  CHECK_FALSE(back.contains("custom_data"));
  REQUIRE(back.contains("user_data"));
  CHECK(back["user_data"] == json::object());
  CHECK(back["action_source"] == "email");
  CHECK(entry.match_keys.empty());
  CHECK(back == meta_event_json(event_of(payload), c, d, now));
}

TEST_CASE("meta entry: a date of birth is in the future by the engine's clock, not the machine's") {
  meta_destination d;
  d.pixel_id = "1";
  d.access_token = "t";
  const json payload =
      json::parse(R"j({"event_time": 1767225600, "action_source": "email", "date_of_birth": "2026-01-02"})j");
  const auto c = std::get<canonical_event>(parse_canonical_event(payload));
  const auto on = [&](std::chrono::system_clock::time_point clock) {
    dropped_fields dropped;
    const auto entry = meta_event_entry_for(event_of(payload), c, d, dropped, clock);
    return std::pair{json::parse(entry.text)["user_data"].contains("db"), dropped.size()};
  };
  // The day before: a date in the future, dropped with a reason. From that day on: sent.
  CHECK(on(now) == std::pair{false, std::size_t{1}});
  CHECK(on(now + std::chrono::days{1}) == std::pair{true, std::size_t{0}});
}

}  // namespace meta_event_test

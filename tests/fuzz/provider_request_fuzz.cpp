// libFuzzer target: one row's payload, as raw bytes, through what the engine does
// with it before any request. Bytes -> JSON (as dispatcher/engine/event_prep.cpp parses
// it) -> parse_canonical_event -> every provider's validate(), and build_request()
// for the events validate() accepts, alone and in a batch of three (the same
// payload under a second key, then the first key again).
//
// What counts as a finding, given what the sender catches:
//  - prepare() (validate() here) reports a bad event as a value; the sender
//    (dispatcher/engine/sender.cpp, `prepare`) turns an exception from it into
//    a dead row as a last resort, so here any exception escapes to libFuzzer;
//  - build_request() runs under `catch (const std::exception&)` in
//    dispatcher/engine/sender_exchange.cpp (the batch goes dead), so
//    std::exception is tolerated; set OUTBOX_FUZZ_STRICT=1 to report it as well
//    (validate() passed, so the row should have been sendable);
//  - any crash, sanitizer report, or a body that is not the JSON it claims to be.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/canonical_event.hpp"
#include "providers/google/google_ads_provider.hpp"
#include "providers/google/google_data_manager_provider.hpp"
#include "providers/meta/meta_provider.hpp"
#include "providers/tiktok/tiktok_provider.hpp"
#include "providers/webhook/webhook_provider.hpp"

namespace {

using namespace outbox::providers;
using std::chrono::system_clock;

// Seeds carry event_time 1767225600 (an hour before), so Meta's age window holds.
const system_clock::time_point now = system_clock::time_point{} + std::chrono::seconds{1767229200};

std::map<std::string, std::string> google_settings(const char* account_key) {
  return {{account_key, "123-456-7890"},
          {"conversion_action_id", "987654"},
          {"client_id", "cid.apps.googleusercontent.com"},
          {"client_secret", "s3cr3t-value"},
          {"refresh_token", "1//refresh-value"},
          {"default_phone_country_code", "1"}};
}

meta_destination meta_dest(std::string phone_code) {
  meta_destination d;
  d.pixel_id = "1234567890";
  d.access_token = "EAAB-test-token";
  d.app_secret = "app-secret";
  d.test_event_code = "TEST123";
  d.default_phone_country_code = std::move(phone_code);
  return d;
}

tiktok_destination tiktok_dest(std::string source) {
  tiktok_destination d;
  d.access_token = "tt-test-token";
  d.event_source = std::move(source);
  d.event_source_id = "CRM123EVENTSET";
  d.default_phone_country_code = "44";
  return d;
}

struct fuzzed_provider {
  std::unique_ptr<provider> impl;
  std::string event_name;
};

std::vector<fuzzed_provider> make_providers() {
  std::vector<fuzzed_provider> all;
  all.push_back({std::make_unique<meta_provider>(meta_dest("")), "Lead"});
  all.push_back({std::make_unique<meta_provider>(meta_dest("1")), "Purchase"});
  all.push_back({std::make_unique<tiktok_provider>(tiktok_dest("crm")), "SubmitForm"});
  all.push_back({std::make_unique<tiktok_provider>(tiktok_dest("web")), "CompletePayment"});
  all.push_back({std::make_unique<google_ads_provider>(
                     make_google_ads_destination(google_settings("customer_id"), {{"x-trace", "1"}})),
                 "Lead"});
  all.push_back({std::make_unique<google_data_manager_provider>(
                     make_google_data_manager_destination(google_settings("account_id"), {})),
                 "Lead"});
  all.push_back({std::make_unique<webhook_provider>(
                     webhook_destination{"https://example.com/hook", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", {}}),
                 "Lead"});
  all.push_back(
      {std::make_unique<webhook_provider>(webhook_destination{"http://hooks.internal/x", "", {}}), "order.paid"});
  return all;
}

outbound_event make_event(const nlohmann::json& payload, std::string_view text, std::string key,
                          const std::string& name) {
  outbound_event e;
  e.row_id = 1;
  e.idempotency_key = std::move(key);
  e.event_name = name;
  e.lead_project_id = 1001;
  e.payload = payload;
  e.payload_text = std::string(text);
  return e;
}

[[noreturn]] void finding(const char* what, std::string_view provider, const std::string& detail) {
  std::fprintf(stderr, "provider_request_fuzz: %s (%.*s): %s\n", what, static_cast<int>(provider.size()),
               provider.data(), detail.c_str());
  std::abort();
}

void check_request(const provider& p, const http_request& request) {
  if (request.url.empty()) finding("request without a URL", p.kind(), request.body);
  if (p.kind() == "webhook") return;  // its body is the stored payload text, verbatim
  const auto body = nlohmann::json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) finding("request body is not a JSON object", p.kind(), request.body);
}

void build(const provider& p, std::span<const outbound_event> events) {
  static const bool strict = std::getenv("OUTBOX_FUZZ_STRICT") != nullptr;
  try {
    check_request(p, p.build_request(events, now));
  } catch (const std::exception& e) {
    // The engine catches this (the batch goes dead); a finding only when strict.
    if (strict) finding("build_request threw after validate() accepted", p.kind(), e.what());
  }
}

void exercise(const provider& p, const std::string& event_name, const nlohmann::json& payload, std::string_view text) {
  const auto first = make_event(payload, text, "7b0c1d2e-key-1", event_name);
  // validate() exceptions are not caught: a provider reports a bad event as a value, never by throwing.
  if (p.validate(first, now)) return;  // the row goes dead with that text; no request
  build(p, std::span(&first, 1));
  if (p.max_batch_size() < 2) return;
  // A batch: the same payload under another key, then a repeat of the first key.
  const std::vector<outbound_event> batch{first, make_event(payload, text, "7b0c1d2e-key-2", event_name), first};
  build(p, batch);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto providers = make_providers();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // dispatcher/engine/event_prep.cpp: invalid JSON and non-objects never reach a provider.
  const auto payload = nlohmann::json::parse(text, nullptr, false);
  if (payload.is_discarded() || !payload.is_object()) return 0;
  (void)parse_canonical_event(payload);
  for (const auto& p : providers) exercise(*p.impl, p.event_name, payload, text);
  return 0;
}

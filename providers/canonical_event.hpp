#pragma once
// The provider-neutral event the CRM (Django) writes into event_delivery.payload:
// one flat JSON object per row, the same for every provider. Each ad-platform
// provider parses it with parse_canonical_event() and maps it to its own API;
// normalization and hashing of the user fields live in providers/user_data/user_data.hpp.
//
//   {"event_time": 1767225600 | "2026-01-01T00:00:00Z",     required
//    "value": 120.5, "currency": "EUR", "order_id": "A-17",
//    "action_source": "system_generated",                    the default
//    "event_source_url": "https://example.com/form",
//    "email", "phone", "first_name", "last_name", "city", "state", "zip",
//    "country", "date_of_birth": "1990-05-26", "gender", "external_id",
//    (each user field may be a list: "email": ["a@x.com", "b@y.com"])
//    "client_ip", "user_agent",
//    "fbc", "fbp", "ttclid", "ttp", "gclid", "gbraid", "wbraid", "lead_id",
//    "consent": {"ad_user_data": "GRANTED", "ad_personalization": "DENIED"},
//    "extra": {"meta": {...}, "tiktok": {...}, "google_ads": {...}, "google_data_manager": {...}}}
//
// Parsing rules (pure, no clock). The input contract is lenient: a field the
// platforms cannot use is dropped with a warning (canonical_event::dropped),
// never the conversion. Only event_time is required here; each provider adds
// what its API requires (validate()).
//  - null, and strings that are empty after trimming, count as absent;
//  - unknown keys are ignored, so the CRM can add fields before we use them;
//  - a wrong type or format drops that field with a reason ("currency:
//    invalid_currency (must be a 3-letter ISO 4217 code)");
//  - user fields (email, phone, names, address, date_of_birth, gender,
//    external_id) take one value or a JSON list of values (integers accepted
//    where an id or phone number may be stored as a number); exact repeats are
//    removed here, repeats after normalization by the provider; at most
//    canonical_max_values per field;
//  - user fields are only type-checked here: a value that cannot be normalized
//    (providers/user_data/user_data.hpp) is dropped by the provider that would send it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/dropped_field.hpp"

namespace outbox::providers {

enum class consent_value { granted, denied };

// "GRANTED" / "DENIED", as Google's APIs spell them.
[[nodiscard]] std::string_view to_string(consent_value v);

struct canonical_consent {
  std::optional<consent_value> ad_user_data;
  std::optional<consent_value> ad_personalization;
};

// Meta's action_source vocabulary, which the canonical event reuses.
inline constexpr std::array<std::string_view, 9> canonical_action_sources{
    "email", "website", "app", "phone_call", "chat", "physical_store", "system_generated", "business_messaging",
    "other"};

// Keys of `extra` that belong to a provider; each must be an object when present.
inline constexpr std::array<std::string_view, 4> canonical_extra_keys{"meta", "tiktok", "google_ads",
                                                                      "google_data_manager"};

// Most values one user field may carry; more are dropped (too_many_values).
inline constexpr std::size_t canonical_max_values = 10;

struct canonical_event {
  std::int64_t event_time = 0;  // unix seconds (RFC 3339 input is converted, fractions dropped)
  std::optional<double> value;
  std::optional<std::string> currency;  // 3 upper-case letters
  std::optional<std::string> order_id;
  std::string action_source = "system_generated";
  std::optional<std::string> event_source_url;  // http:// or https://

  // User data, raw (trimmed) as sent, one entry per value; see user_data.hpp
  // for normalization.
  std::vector<std::string> email;
  std::vector<std::string> phone;
  std::vector<std::string> first_name;
  std::vector<std::string> last_name;
  std::vector<std::string> city;
  std::vector<std::string> state;
  std::vector<std::string> zip;
  std::vector<std::string> country;
  std::vector<std::string> date_of_birth;  // YYYYMMDD, YYYY-MM-DD, MM/DD/YYYY (checked by the provider)
  std::vector<std::string> gender;         // f, m, female, male (checked by the provider)
  std::vector<std::string> external_id;
  std::optional<std::string> client_ip;
  std::optional<std::string> user_agent;

  // Click and lead identifiers, never hashed.
  std::optional<std::string> fbc;
  std::optional<std::string> fbp;
  std::optional<std::string> ttclid;
  std::optional<std::string> ttp;
  std::optional<std::string> gclid;
  std::optional<std::string> gbraid;
  std::optional<std::string> wbraid;
  std::optional<std::string> lead_id;

  canonical_consent consent;
  // The whole `extra` object (always an object; {} when absent).
  nlohmann::json extra = nlohmann::json::object();
  // Fields left out while parsing, with why (the conversion is still sent).
  dropped_fields dropped;

  // extra[provider_key] when it is a non-empty object; nullptr otherwise.
  [[nodiscard]] const nlohmann::json* extra_for(std::string_view provider_key) const;
};

// Why a payload is not a usable canonical event (no event_time, not an object).
struct field_error {
  std::string field;    // "currency", "consent.ad_user_data", "extra.meta"
  std::string problem;  // "must be a 3-letter ISO 4217 code, got 'euro'"

  // "<field>: <problem>", the text stored as the row's error.
  [[nodiscard]] std::string message() const;
  friend bool operator==(const field_error&, const field_error&) = default;
};

using canonical_parse_result = std::variant<canonical_event, field_error>;

// Parses and checks one payload (see the rules at the top of this file).
[[nodiscard]] canonical_parse_result parse_canonical_event(const nlohmann::json& payload);

// RFC 3339 date-time ("2026-01-01T10:00:00Z", "2026-01-01t10:00:00.250+02:00",
// a space instead of 'T' is accepted) to unix seconds, fractions dropped.
// nullopt for anything else, including impossible dates and times.
[[nodiscard]] std::optional<std::int64_t> parse_rfc3339(std::string_view text);

// Unix seconds as "YYYY-MM-DDTHH:MM:SSZ".
[[nodiscard]] std::string format_rfc3339_utc(std::int64_t unix_seconds);

// Merges `extra` into a provider's event as a JSON merge patch (RFC 7386):
// objects merge key by key (so {"custom_data": {"contents": [...]}} adds to what
// we built), other values replace ours, null removes a key. `extra` may be null.
void merge_extra(nlohmann::json& event, const nlohmann::json* extra);

}  // namespace outbox::providers

#pragma once
// What both Google providers (google_ads, google_data_manager) share: the Google
// view of a canonical event, and Google's error envelope (google.rpc.Status) as
// REST APIs serialize it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/canonical_event.hpp"
#include "providers/dropped_field.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

// What a Google provider takes from a row's canonical payload
// (providers/canonical_event.hpp): identifiers, value, consent, and the
// provider's `extra` object. User data is already normalized and hashed
// (providers/user_data/user_data.hpp): SHA-256 lower-case hex.
struct google_event {
  std::int64_t event_time = 0;  // unix seconds, frozen at insert
  std::string action_source;    // the canonical event's (Meta's vocabulary): "system_generated"
  std::optional<double> value;
  std::string currency;  // ISO 4217, upper case; empty when absent
  std::string gclid;
  std::string gbraid;
  std::string wbraid;
  std::vector<std::string> hashed_emails;  // Google's email rules (gmail dots and +tags removed)
  std::vector<std::string> hashed_phones;  // E.164 with the '+'
  // The address identifier (Data Manager AddressInfo): hashed names, the country
  // as region code and the postal code in clear, as Google's formatting rules say.
  struct address_info {
    std::string hashed_given_name;
    std::string hashed_family_name;
    std::string region_code;  // ISO 3166-1 alpha-2, upper case
    std::string postal_code;
  };
  std::optional<address_info> address;
  std::optional<consent_value> ad_user_data;  // consent; nullopt: not given
  std::optional<consent_value> ad_personalization;
  nlohmann::json extra;    // payload.extra.<extra_key> (an object), or null
  dropped_fields dropped;  // fields left out, with why

  [[nodiscard]] bool has_click_id() const { return !gclid.empty() || !gbraid.empty() || !wbraid.empty(); }
  [[nodiscard]] bool has_user_identifiers() const {
    return !hashed_emails.empty() || !hashed_phones.empty() || address.has_value();
  }
  // The match keys (match_keys.hpp) this event carries to Google.
  [[nodiscard]] std::vector<std::string> match_keys() const;
};

// Reads the canonical payload of `event` for a Google provider; the text says what
// is wrong (naming the field) when the row can never be sent. `extra_key` is
// "google_ads" or "google_data_manager"; phones without a country code get
// `default_phone_country_code` (digits, may be empty).
// `with_address`: read names, country and zip into an address identifier (Data
// Manager); the Ads API's click conversions take emails and phones only, so its
// rows neither read nor drop those fields.
[[nodiscard]] std::variant<google_event, std::string> read_google_event(const outbound_event& event,
                                                                        std::string_view extra_key,
                                                                        std::string_view default_phone_country_code,
                                                                        std::chrono::system_clock::time_point now,
                                                                        bool with_address = false);

// Why Google can never take this event, or nullopt: no identifier it can match
// (`needs` says which, per API), a negative value, or an idempotency key that
// cannot be the API's dedup id (`key_field`: "orderId", "transactionId").
[[nodiscard]] std::optional<std::string> google_event_problem(const google_event& e, const outbound_event& event,
                                                              std::string_view needs, std::string_view key_field);

// Outcomes both Google providers' classifiers give.
[[nodiscard]] event_outcome google_retry_outcome(std::string error,
                                                 std::optional<std::chrono::seconds> after = std::nullopt);
[[nodiscard]] event_outcome google_dead_outcome(std::string error);

// One error inside a google.rpc.Status: an entry of Google Ads' GoogleAdsFailure
// (errorCode + location), a google.rpc.ErrorInfo reason, or a BadRequest field
// violation (Data Manager).
struct google_error_item {
  std::string kind;  // the errorCode key ("conversionUploadError", "authorizationError"...), "ErrorInfo", "BadRequest"
  std::string code;  // "EVENT_NOT_FOUND", "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE", "INVALID_FORMAT"...
  std::string message;
  std::optional<std::size_t> row;  // index in the request's conversions[] / events[], when located
};

// A google.rpc.Status as REST APIs serialize it.
struct google_status {
  int code = 0;         // HTTP status in {"error": ...}; gRPC code in partialFailureError
  std::string status;   // "INVALID_ARGUMENT", "UNAUTHENTICATED"...
  std::string message;  // Google's text
  std::vector<google_error_item> errors;
  std::optional<std::chrono::seconds> retry_delay;  // google.rpc.RetryInfo or Ads quotaErrorDetails

  [[nodiscard]] bool has_code(std::string_view c) const;
};

// Reads a google.rpc.Status object (the value of "error", or of
// "partialFailureError"). `list_field` names the repeated request field whose index
// locates a row: "conversions" (Google Ads fieldPathElements) or "events" (Data
// Manager field violations such as "events[3].event_timestamp").
[[nodiscard]] google_status parse_google_status(const nlohmann::json& status, std::string_view list_field);
// {"error": {...}} from a response body; nullopt for any other body.
[[nodiscard]] std::optional<google_status> parse_google_error_body(std::string_view body, std::string_view list_field);
// A protobuf JSON Duration ("30s", "1.5s", "0.200s") rounded up to whole seconds and
// capped at max_retry_after; nullopt when malformed.
[[nodiscard]] std::optional<std::chrono::seconds> parse_google_duration(std::string_view text);
// "conversions[3].gclid" / "events.3" / "events[3]" -> 3 when the path starts with
// `list`; Data Manager's documented "events.events[0].user_data" is found too.
[[nodiscard]] std::optional<std::size_t> google_index_in_path(std::string_view path, std::string_view list);
// One line for logs and rows: "HTTP 403 PERMISSION_DENIED: <message> (CODE: text; CODE: text)".
[[nodiscard]] std::string describe_google_status(const google_status& s);

}  // namespace outbox::providers

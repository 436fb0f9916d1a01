#pragma once
// The `google_ads` provider: offline click conversions through the Google Ads API
// (ConversionUploadService.UploadClickConversions, REST):
//
//   POST {base_url}/{api_version}/customers/{customer_id}:uploadClickConversions
//   {"conversions": [...], "partialFailure": true, "validateOnly"?: true}
//
// One conversion per row, orderId = the row's idempotency key (Google keeps order
// ids per conversion action with no expiry, so a resend answers
// ORDER_ID_ALREADY_IN_USE, which we count as delivered). Partial failure is on:
// each row's outcome is read from partialFailureError by its index in the request.
// OAuth2: the engine fetches the bearer token with oauth() and refreshes it once
// on `reauthenticate` (401).
//
// Since 2026-06-15 Google accepts these uploads only from developers already
// allowlisted (CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE otherwise): everyone else
// uses the `google_data_manager` provider (providers/google/google_data_manager_provider.hpp).
//
// What both Google providers share is in providers/google/google_common.hpp (events,
// google.rpc.Status) and providers/google/google_settings.hpp (settings helpers).
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/canonical_event.hpp"
#include "providers/google/google_common.hpp"
#include "providers/google/google_settings.hpp"
#include "providers/http/http_types.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

// ==== The google_ads provider ===================================================

inline constexpr std::string_view google_ads_default_base_url = "https://googleads.googleapis.com";
// The latest Google Ads API major version (v26, released 2026-10-14).
inline constexpr std::string_view google_ads_default_api_version = "v26";
inline constexpr std::size_t google_ads_max_batch = 2000;  // conversions per request
// How long Google asks to wait after TOO_RECENT_EVENT / TOO_RECENT_CONVERSION_ACTION.
inline constexpr std::chrono::seconds google_ads_too_recent_delay{std::chrono::hours{6}};

inline constexpr std::size_t google_ads_max_user_identifiers = 5;  // per click conversion

struct google_ads_destination {
  std::string base_url{google_ads_default_base_url};
  std::string api_version{google_ads_default_api_version};
  std::string customer_id;           // 10 digits, no dashes
  std::string conversion_action_id;  // digits
  std::string login_customer_id;     // manager account (10 digits) or empty
  std::string developer_token;       // optional (Google ignores it since 2026-09-09)
  oauth_settings oauth;
  bool validate_only = false;  // test mode: Google validates and records nothing
  std::size_t batch_size = 1000;
  std::string default_phone_country_code;  // digits, e.g. "1"; empty: phones must carry one
  header_list extra_headers;

  [[nodiscard]] std::string url() const;                // .../customers/{cid}:uploadClickConversions
  [[nodiscard]] std::string conversion_action() const;  // "customers/{cid}/conversionActions/{id}"
};

// "2026-09-20 14:03:00+00:00": conversionDateTime from unix seconds, in UTC.
[[nodiscard]] std::string google_ads_date_time(std::int64_t unix_seconds);

// One ClickConversion object for an event (extra.google_ads merged in: it may add
// fields and override mapped ones, except orderId and conversionAction).
[[nodiscard]] nlohmann::json google_ads_conversion(const google_event& e, const outbound_event& event,
                                                   const google_ads_destination& d);

// Which conversions of a batch go into the request, and where: for each its index
// in the request's conversions[], or nullopt when an earlier one has the same
// orderId, or the same click id and conversionDateTime (Google refuses such rows as
// DUPLICATE_ORDER_ID / DUPLICATE_CLICK_CONVERSION_IN_REQUEST); those are held back
// and sent again alone (resend_alone), where the first one's fate decides theirs.
[[nodiscard]] std::vector<std::optional<std::size_t>> google_ads_request_rows(
    std::span<const nlohmann::json> conversions);

// The outcome for one row Google reported an error for (partialFailureError).
// `pause` is set when the error means no row can succeed (missing conversion
// action, not allowlisted, terms not accepted...).
struct google_ads_row_verdict {
  event_outcome outcome;
  std::optional<std::string> pause;
};
[[nodiscard]] google_ads_row_verdict google_ads_row_outcome(const google_error_item& error);

// Pure verdict on a result, given where each event went (google_ads_request_rows).
[[nodiscard]] batch_outcome classify_google_ads_result(std::span<const std::optional<std::size_t>> rows,
                                                       const http_result& result,
                                                       std::chrono::system_clock::time_point now);

class google_ads_provider final : public provider {
 public:
  explicit google_ads_provider(google_ads_destination destination);

  [[nodiscard]] std::string_view kind() const override { return "google_ads"; }
  [[nodiscard]] std::size_t max_batch_size() const override { return destination_.batch_size; }
  // Needs a parseable event_time and a gclid, gbraid or wbraid, or at least one
  // hashed email or phone (enhanced conversions for leads); the idempotency key
  // must fit orderId (100 characters). When several click ids are present one
  // is sent: gclid, else gbraid, else wbraid (Google accepts exactly one).
  [[nodiscard]] preparation prepare(const outbound_event& event,
                                    std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] http_request build_request(std::span<const outbound_event> events,
                                           std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] batch_outcome classify(std::span<const outbound_event> events, const http_result& result,
                                       std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] const oauth_settings* oauth() const override { return &destination_.oauth; }

  [[nodiscard]] const google_ads_destination& destination() const { return destination_; }

 private:
  google_ads_destination destination_;
};

// Settings of a google_ads destination (lower-case keys), for provider_kinds().
inline constexpr std::array<std::string_view, 13> google_ads_setting_keys{"customer_id",
                                                                          "conversion_action_id",
                                                                          "login_customer_id",
                                                                          "developer_token",
                                                                          "client_id",
                                                                          "client_secret",
                                                                          "refresh_token",
                                                                          "token_url",
                                                                          "base_url",
                                                                          "api_version",
                                                                          "validate_only",
                                                                          "batch_size",
                                                                          "default_phone_country_code"};

// (key, problem) pairs; never echoes a secret.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> validate_google_ads_settings(
    const std::map<std::string, std::string>& settings);

// From validated settings; throws std::invalid_argument on values validation refuses.
[[nodiscard]] google_ads_destination make_google_ads_destination(const std::map<std::string, std::string>& settings,
                                                                 header_list extra_headers);

}  // namespace outbox::providers

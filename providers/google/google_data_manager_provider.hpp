#pragma once
// The `google_data_manager` provider: Google Ads offline click conversions (and
// enhanced conversions for leads) through the Data Manager API, Google's
// replacement for the Google Ads API upload since 2026-06-15:
//
//   POST {base_url}/v1/events:ingest
//   {"destinations": [{"operatingAccount": {"accountType": "GOOGLE_ADS", "accountId"},
//                      "loginAccount"?: {...}, "productDestinationId": <conversion action id>}],
//    "events": [{"transactionId", "eventTimestamp", "conversionValue", "currency",
//                "adIdentifiers": {"gclid"|"gbraid"|"wbraid"},
//                "userData": {"userIdentifiers": [{"emailAddress"}, {"phoneNumber"}]},
//                "consent": {"adUserData", "adPersonalization"}}],
//    "encoding": "HEX", "validateOnly"?: true}
//
// Field names from google/ads/datamanager/v1 (ingestion_service.proto, event.proto,
// destination.proto, user_data.proto, consent.proto). transactionId = the row's
// idempotency key. No developer token and no login-customer-id header: accounts
// travel in `destinations`. OAuth2 scope https://www.googleapis.com/auth/datamanager.
//
// Errors are fast-fail: one invalid event refuses the whole request (400
// INVALID_ARGUMENT, with a BadRequest field violation such as
// "events.events[3].event_source"): the named events go dead and the rest are sent
// again at once in one request (resend_group); with none named, in halves.
// A 200 only means the request was valid: processing is asynchronous. The
// answer's requestId is kept (provider_request); the engine's reconciler asks
//   GET {base_url}/v1/requestStatus:retrieve?requestId=...
// status_check_delay after acceptance and again after each further delay, until
// SUCCESS, PARTIAL_SUCCESS or FAILED (recorded FAILURE). A row is `sent` once the
// request is accepted; the reconciled status says whether Google processed it.
#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/google/google_common.hpp"
#include "providers/http/http_types.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

inline constexpr std::string_view google_data_manager_default_base_url = "https://datamanager.googleapis.com";
inline constexpr std::size_t google_data_manager_max_batch = 2000;  // events per IngestEventsRequest

struct google_data_manager_destination {
  std::string base_url{google_data_manager_default_base_url};
  std::string account_id;            // operatingAccount: the Google Ads conversion account, 10 digits
  std::string conversion_action_id;  // productDestinationId
  std::string login_account_id;      // loginAccount (a manager account), or empty
  oauth_settings oauth;
  bool validate_only = false;  // test mode: Google validates and ingests nothing
  std::size_t batch_size = 1000;
  std::string default_phone_country_code;
  header_list extra_headers;
  // Google: "wait for 30 minutes, then send a RetrieveRequestStatus request", repeating until final.
  std::chrono::seconds status_check_delay{1800};

  [[nodiscard]] std::string url() const;                                    // {base_url}/v1/events:ingest
  [[nodiscard]] std::string status_url(std::string_view request_id) const;  // .../v1/requestStatus:retrieve?requestId=
  [[nodiscard]] nlohmann::json destination_json() const;
};

// The Google Cloud project an OAuth client belongs to, as Data Manager's quotas
// count it: "google-cloud-project:123456789012" from the client id
// "123456789012-abc.apps.googleusercontent.com"; the whole id when it has no
// project number in front.
[[nodiscard]] std::string google_cloud_project_of(std::string_view client_id);

// "CONSENT_GRANTED" / "CONSENT_DENIED" (Data Manager's ConsentStatus).
[[nodiscard]] std::string_view data_manager_consent(consent_value v);

// "WEB", "APP", "IN_STORE", "PHONE" from the canonical action_source, else "OTHER".
[[nodiscard]] std::string_view data_manager_event_source(std::string_view action_source);

// One Event object, eventSource always set (extra.google_data_manager merged as a
// JSON merge patch; the transactionId stays the idempotency key).
[[nodiscard]] nlohmann::json data_manager_event(const google_event& e, const outbound_event& event);

// For each event its index in events[], or nullopt when an earlier event of the
// batch has the same transactionId (held back and resent alone).
[[nodiscard]] std::vector<std::optional<std::size_t>> data_manager_request_rows(std::span<const nlohmann::json> events);

// Pure verdict on a result, given where each event went.
[[nodiscard]] batch_outcome classify_data_manager_result(std::span<const std::optional<std::size_t>> rows,
                                                         const http_result& result,
                                                         std::chrono::system_clock::time_point now);

class google_data_manager_provider final : public provider {
 public:
  explicit google_data_manager_provider(google_data_manager_destination destination);

  [[nodiscard]] std::string_view kind() const override { return "google_data_manager"; }
  [[nodiscard]] std::size_t max_batch_size() const override { return destination_.batch_size; }
  // Needs a parseable event_time and a gclid, gbraid or wbraid, or an email or
  // phone that can be hashed (Google: NO_IDENTIFIERS_PROVIDED otherwise).
  [[nodiscard]] preparation prepare(const outbound_event& event,
                                    std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] http_request build_request(std::span<const outbound_event> events,
                                           std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] batch_outcome classify(std::span<const outbound_event> events, const http_result& result,
                                       std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] const oauth_settings* oauth() const override { return &destination_.oauth; }
  [[nodiscard]] std::optional<http_request> status_request(std::string_view request_id) const override;
  [[nodiscard]] request_status read_status(const http_result& result) const override;
  [[nodiscard]] std::chrono::seconds status_check_delay() const override { return destination_.status_check_delay; }
  [[nodiscard]] std::string status_quota_scope() const override;

  [[nodiscard]] const google_data_manager_destination& destination() const { return destination_; }

 private:
  google_data_manager_destination destination_;
};

inline constexpr std::array<std::string_view, 12> google_data_manager_setting_keys{"account_id",
                                                                                   "conversion_action_id",
                                                                                   "login_account_id",
                                                                                   "client_id",
                                                                                   "client_secret",
                                                                                   "refresh_token",
                                                                                   "token_url",
                                                                                   "base_url",
                                                                                   "validate_only",
                                                                                   "batch_size",
                                                                                   "default_phone_country_code",
                                                                                   "status_check_delay_seconds"};

// The requestId of an events:ingest answer ("" when absent).
[[nodiscard]] std::string data_manager_request_id(std::string_view body);
// A RetrieveRequestStatus answer for our one destination.
[[nodiscard]] request_status read_data_manager_status(const http_result& result);

// (key, problem) pairs; never echoes a secret.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> validate_google_data_manager_settings(
    const std::map<std::string, std::string>& settings);

// From validated settings; throws std::invalid_argument on values validation refuses.
[[nodiscard]] google_data_manager_destination make_google_data_manager_destination(
    const std::map<std::string, std::string>& settings, header_list extra_headers);

}  // namespace outbox::providers

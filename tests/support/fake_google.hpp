#pragma once
// A local stand-in for three Google endpoints, over real HTTPS (a
// test_https_server with a certificate from the given CA, on its own thread):
//
//   POST /token                                        OAuth2 refresh-token grant
//   POST /<version>/customers/<id>:uploadClickConversions   Google Ads API
//   POST /v1/events:ingest                             Data Manager API
//   GET  /v1/requestStatus:retrieve?requestId=...      Data Manager request status
//
// It answers the way the real APIs do, as far as the dispatcher cares:
//  - the token endpoint checks the client id/secret and refresh token, issues
//    access tokens with a configurable lifetime, counts refreshes (and how many
//    overlapped), and can be told to answer invalid_grant;
//  - both APIs require a bearer token it issued and that has not expired or been
//    expired on purpose (401 UNAUTHENTICATED otherwise);
//  - uploadClickConversions needs partialFailure: true and reports per-row errors in
//    partialFailureError, located by fieldPathElements [{conversions, index}]:
//    UNPARSEABLE_GCLID for a gclid with characters a real one never has, any error
//    set with fail_gclid(), ORDER_ID_ALREADY_IN_USE for an orderId uploaded before
//    (to the same conversion action) and DUPLICATE_ORDER_ID for a repeat inside one
//    request; validateOnly requests are checked but change nothing;
//  - events:ingest validates the whole request (fast fail: one bad event refuses it
//    with INVALID_ARGUMENT, google.rpc.ErrorInfo and a BadRequest field violation
//    naming events.events[i], as Google's own example does) and answers
//    {"requestId": "<unique>"} (IngestEventsResponse; validateOnly requests get {}:
//    "Only errors are returned, not results"); since v1.8 an event without
//    eventSource is refused (REQUIRED_FIELD_MISSING at events.events[i].event_source)
//    and a malformed optional field (an address postalCode with other than letters,
//    digits, blanks and '-') comes back as a fieldWarning in the 200;
//  - requestStatus:retrieve answers from fake_request_statuses (fake_google_status.hpp):
//    scripted per request, PROCESSING for `processing_reads` reads then SUCCESS by default.
// Anything else can be scripted on server() (scripted plans win over all of this).
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/fake_google_status.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::test {

struct fake_google_options {
  std::chrono::seconds token_lifetime{3600};  // expires_in of each access token
  std::chrono::milliseconds token_delay{0};   // the token endpoint answers after this long
  std::chrono::milliseconds api_delay{0};     // both APIs answer after this long
  int processing_reads = 1;  // requestStatus:retrieve of an unscripted request: PROCESSING this often, then SUCCESS
  // events:ingest refuses a request holding this gclid with a 400 INVALID_ARGUMENT that names
  // no field, as Google does for some problems: the dispatcher can only halve the batch.
  std::string unlocated_refusal_gclid;
};

class fake_google {
 public:
  static constexpr std::string_view client_id = "fake-client.apps.googleusercontent.com";
  static constexpr std::string_view client_secret = "fake-client-secret";
  static constexpr std::string_view refresh_token = "1//fake-refresh-token";

  explicit fake_google(const test_ca& ca, fake_google_options opts = {});
  ~fake_google();
  fake_google(const fake_google&) = delete;
  fake_google& operator=(const fake_google&) = delete;

  [[nodiscard]] std::string base_url() const;   // "https://localhost:<port>"
  [[nodiscard]] std::string token_url() const;  // base_url() + "/token"
  // The dispatcher settings of destination `name` of `provider` ("GOOGLE_ADS" or
  // "GOOGLE_DATA_MANAGER") on this fake: its ids, OAuth client and URLs.
  [[nodiscard]] std::map<std::string, std::string, std::less<>> destination_settings(
      std::string_view provider, std::string_view name = "DEFAULT") const;

  // ---- OAuth ----
  // From now on the token endpoint answers 400 invalid_grant.
  void revoke_refresh_token();
  // Every access token issued so far is refused from now on (as if revoked early).
  void expire_access_tokens();
  [[nodiscard]] bool token_is_valid(std::string_view access_token) const;
  [[nodiscard]] int refreshes() const;  // token requests answered, successful or not
  // Most token requests that were being answered at the same moment.
  [[nodiscard]] int max_concurrent_refreshes() const;
  [[nodiscard]] int unauthorized_answers() const;  // 401s from the two APIs
  [[nodiscard]] std::vector<recorded_request> token_requests() const;

  // ---- Google Ads ----
  // Rows with this gclid fail with `code` (a ConversionUploadError name).
  void fail_gclid(std::string gclid, std::string code, std::string message = {});
  // As if this orderId had been uploaded to this conversion action before.
  void mark_order_id_used(std::string conversion_action, std::string order_id);
  // From now on uploadClickConversions answers 403 CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE.
  void refuse_ads_uploads_not_allowlisted();
  [[nodiscard]] std::vector<nlohmann::json> uploaded_conversions() const;  // accepted, not validateOnly
  [[nodiscard]] std::vector<recorded_request> ads_requests() const;

  // ---- Data Manager ----
  [[nodiscard]] std::vector<nlohmann::json> ingested_events() const;          // accepted, not validateOnly
  [[nodiscard]] std::vector<recorded_request> data_manager_requests() const;  // events:ingest
  [[nodiscard]] std::vector<recorded_request> status_requests() const;        // requestStatus:retrieve
  // Request ids, scripts and read counts of requestStatus:retrieve.
  [[nodiscard]] fake_request_statuses& statuses();

  [[nodiscard]] test_https_server& server() { return server_; }

 private:
  struct state;
  std::unique_ptr<state> state_;  // declared first: outlives the server thread that uses it
  test_https_server server_;
};

}  // namespace outbox::test

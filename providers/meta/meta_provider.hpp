#pragma once
// The `meta` provider: Meta Conversions API.
//   POST {base_url}/{api_version}/{pixel_id}/events?access_token=...&appsecret_proof=...
//   {"data": [event...], "test_event_code"?: "..."}
// The token goes where Meta's reference puts it, in the query string; the
// dispatcher never logs request URLs. Events are built from the canonical payload (canonical_event.hpp)
// with user data normalized and hashed per user_data.hpp; `extra.meta` is merged
// into each event last (except `event_id`, which is always the row's key).
//
// Meta rejects a whole request when one event in it is invalid (error code 100):
// the provider then asks the engine to resend every event of that batch alone
// (resend_alone), so only the culprit goes dead, with Meta's own message. That
// costs 1 + (bad events) refused requests however large the batch, the fewest
// of any split: halving would add a refused request per level, and Meta rates
// the app by its error share (client_error_window.hpp).
// Token (190, 102, 104), permission (3, 10, 200-299), unknown pixel (100 with
// subcode 33) and appsecret_proof errors pause the destination.
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
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/canonical_event.hpp"
#include "providers/http/http_types.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

inline constexpr std::size_t meta_max_batch_size = 1000;  // Meta's limit per request
inline constexpr std::int64_t meta_max_event_age_days = 7;
inline constexpr std::int64_t meta_max_physical_store_age_days = 62;
// Meta documents no future bound; a conversion cannot have happened later than
// now, so more than this ahead (clock skew allowance) is a CRM clock or time-zone bug.
inline constexpr std::int64_t meta_max_future_seconds = 600;

struct meta_destination {
  std::string pixel_id;                                 // digits
  std::string access_token;                             // secret
  std::string app_secret;                               // secret; empty: no appsecret_proof
  std::string api_version = "v27.0";                    // newest Marketing API version (2026-11-04), api_versions.cpp
  std::string base_url = "https://graph.facebook.com";  // no trailing '/'
  std::string test_event_code;                          // empty: live events
  std::size_t batch_size = 500;                         // 1..meta_max_batch_size
  std::string default_phone_country_code;               // digits; empty: none
  bool hold_reclaimed = false;                          // on_expired_lease=hold
  std::string lead_event_source = "outbox-dispatcher";  // custom_data.lead_event_source for CRM events
};

// Settings of a `meta` destination (lower-case keys), as the configuration holds them.
inline constexpr std::array<std::string_view, 10> meta_setting_keys{
    "pixel_id",        "access_token",      "app_secret",
    "api_version",     "base_url",          "batch_size",
    "test_event_code", "lead_event_source", "default_phone_country_code",
    "on_expired_lease"};

// One (key, problem) pair per problem; never echoes access_token or app_secret.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> validate_meta_settings(
    const std::map<std::string, std::string>& settings);

// Builds the destination from validated settings (defaults for absent keys).
[[nodiscard]] meta_destination make_meta_destination(const std::map<std::string, std::string>& settings);

// Hex HMAC-SHA256(key = app_secret, message = access_token), Graph API's appsecret_proof.
[[nodiscard]] std::string meta_appsecret_proof(std::string_view app_secret, std::string_view access_token);

// {base_url}/{api_version}/{pixel_id}/events
[[nodiscard]] std::string meta_events_url(const meta_destination& destination);

// Why Meta would refuse the event because of its time, or nullopt: older than 7
// days (62 for physical_store) fails the whole request at Meta; more than
// meta_max_future_seconds ahead cannot be a real conversion time.
[[nodiscard]] std::optional<std::string> meta_event_age_problem(const canonical_event& event,
                                                                std::chrono::system_clock::time_point now);

// One entry of "data": event_name, event_time, event_id (the idempotency key),
// action_source, event_source_url, user_data (em, ph, fn, ln, ge, db, ct, st, zp,
// country, external_id as arrays of SHA-256 hex; client_ip_address,
// client_user_agent, fbc, fbp, lead_id raw), custom_data (value, currency,
// order_id; event_source "crm" and lead_event_source when action_source is
// system_generated), then extra.meta merged.
// User fields go as arrays (Meta takes several values), repeats after
// normalization removed; unusable values are added to `dropped`.
// `now`: the engine's clock (a date of birth after its day is unusable).
[[nodiscard]] nlohmann::json meta_event_json(const outbound_event& event, const canonical_event& canonical,
                                             const meta_destination& destination, dropped_fields& dropped,
                                             std::chrono::system_clock::time_point now);
[[nodiscard]] nlohmann::json meta_event_json(const outbound_event& event, const canonical_event& canonical,
                                             const meta_destination& destination,
                                             std::chrono::system_clock::time_point now);

// The match keys (match_keys.hpp) one entry of "data" carries.
[[nodiscard]] std::vector<std::string> meta_match_keys(const nlohmann::json& event);

// The same entry as compact JSON text, and its match keys: what a batch body
// joins. Written straight to text (json_text_writer.hpp) unless extra.meta has
// to be merged, which goes through meta_event_json. Either way the text parses
// to meta_event_json's document.
struct meta_event_entry {
  std::string text;
  std::vector<std::string> match_keys;
};
[[nodiscard]] meta_event_entry meta_event_entry_for(const outbound_event& event, const canonical_event& canonical,
                                                    const meta_destination& destination, dropped_fields& dropped,
                                                    std::chrono::system_clock::time_point now);

// Graph API error envelope: {"error": {"message", "type", "code", "error_subcode",
// "is_transient", "error_user_title", "error_user_msg", "fbtrace_id"}}.
struct meta_error {
  int code = 0;
  std::optional<int> subcode;
  bool is_transient = false;
  std::string message;
  std::string type;
  std::string user_title;
  std::string user_msg;
  std::string fbtrace_id;
};

// nullopt when the body is not such an envelope.
[[nodiscard]] std::optional<meta_error> parse_meta_error(std::string_view body);

enum class meta_error_action {
  retry,              // transient (is_transient, 1, 2, 4, 17, 32, 341, 368, 613, or HTTP 5xx/429)
  pause_destination,  // token (190, 102, 104), permission (3, 10, 200-299), unknown pixel (100/33),
                      // appsecret_proof refused (100 naming it)
  reject_batch,       // the request was invalid: find the culprit (batch) or dead (single event)
};

[[nodiscard]] meta_error_action meta_error_action_for(const meta_error& error, int http_status);

// "Meta error 100 (subcode 2804019): <error_user_msg, else message> [fbtrace_id ...]", one line.
[[nodiscard]] std::string meta_error_text(const meta_error& error);

class meta_provider final : public provider {
 public:
  explicit meta_provider(meta_destination destination);

  [[nodiscard]] std::string_view kind() const override { return "meta"; }
  [[nodiscard]] std::size_t max_batch_size() const override { return destination_.batch_size; }
  // Canonical parse errors, events Meta would refuse for their age, website
  // events without event_source_url or user_agent: dead before any request.
  [[nodiscard]] preparation prepare(const outbound_event& event,
                                    std::chrono::system_clock::time_point now) const override;
  // Throws std::invalid_argument for an event validate() would refuse.
  [[nodiscard]] http_request build_request(std::span<const outbound_event> events,
                                           std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] batch_outcome classify(std::span<const outbound_event> events, const http_result& result,
                                       std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] bool hold_reclaimed() const override { return destination_.hold_reclaimed; }
  [[nodiscard]] std::string_view api_version() const override { return destination_.api_version; }

  [[nodiscard]] const meta_destination& destination() const { return destination_; }

 private:
  meta_destination destination_;
  std::string appsecret_proof_;  // empty without app_secret
};

}  // namespace outbox::providers

#pragma once
// The `tiktok` provider: TikTok Events API 2.0.
//   POST {base_url}/open_api/v1.3/event/track/
//   Access-Token: <token>                       (no "Bearer")
//   {"event_source": "crm", "event_source_id": "...", "data": [event...], "test_event_code"?: "..."}
// Each event: event, event_time, event_id (the idempotency key), user {email,
// phone, external_id hashed; ttclid, ttp, ip, user_agent raw}, properties
// {currency, value, order_id}, page {url}, lead {lead_id, lead_event_source}
// (CRM event sources only),
// then `extra.tiktok` merged (except event_id, which is always the row's key).
//
// TikTok answers HTTP 200 even for errors; the body's "code" decides:
//   0 -> delivered; 40100, 40132, 50000, 50002, 60001, 61000 -> retry;
//   40102, 40104, 40105 (token) -> pause the destination;
//   other codes -> the request was refused: each event of a batch is resent
//   alone (so one bad event does not kill its neighbours), a single event is dead.
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

inline constexpr std::size_t tiktok_max_batch_size = 1000;
inline constexpr std::string_view tiktok_track_path = "/open_api/v1.3/event/track/";

struct tiktok_destination {
  std::string access_token;                                  // secret
  std::string event_source = "crm";                          // web | app | offline | crm
  std::string event_source_id;                               // pixel code or event set id
  std::string base_url = "https://business-api.tiktok.com";  // no trailing '/'
  std::string test_event_code;                               // empty: live events
  std::size_t batch_size = 500;                              // 1..tiktok_max_batch_size
  std::string default_phone_country_code;                    // digits; empty: none
  std::string lead_event_source = "outbox-dispatcher";       // lead.lead_event_source
  std::int64_t max_event_age_days = 28;                      // tiktok_default_max_age_days(event_source) unless set
};

// Acceptance window (TikTok's portal is not reachable from here; see
// docs/providers.md): web and app events up to 7 days old, offline and CRM
// events up to 28 days; never more than tiktok_max_future_seconds ahead.
[[nodiscard]] std::int64_t tiktok_default_max_age_days(std::string_view event_source);
inline constexpr std::int64_t tiktok_max_future_seconds = 600;

// Why TikTok would not attribute the event because of its time, or nullopt.
[[nodiscard]] std::optional<std::string> tiktok_event_time_problem(std::int64_t event_time,
                                                                   const tiktok_destination& destination,
                                                                   std::chrono::system_clock::time_point now);

inline constexpr std::array<std::string_view, 9> tiktok_setting_keys{"access_token",
                                                                     "event_source",
                                                                     "event_source_id",
                                                                     "base_url",
                                                                     "test_event_code",
                                                                     "batch_size",
                                                                     "default_phone_country_code",
                                                                     "lead_event_source",
                                                                     "max_event_age_days"};

// One (key, problem) pair per problem; never echoes access_token.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> validate_tiktok_settings(
    const std::map<std::string, std::string>& settings);

[[nodiscard]] tiktok_destination make_tiktok_destination(const std::map<std::string, std::string>& settings);

// {base_url}/open_api/v1.3/event/track/
[[nodiscard]] std::string tiktok_track_url(const tiktok_destination& destination);

// One entry of "data" (see the top of this file). `lead` is sent for crm
// destinations only (lead_event_source always, lead_id when known); `page`
// when the event has event_source_url.
// Unusable user values are added to `dropped`.
[[nodiscard]] nlohmann::json tiktok_event_json(const outbound_event& event, const canonical_event& canonical,
                                               const tiktok_destination& destination, dropped_fields& dropped,
                                               std::chrono::system_clock::time_point now);
[[nodiscard]] nlohmann::json tiktok_event_json(const outbound_event& event, const canonical_event& canonical,
                                               const tiktok_destination& destination,
                                               std::chrono::system_clock::time_point now);
// The match keys (match_keys.hpp) one entry of "data" carries.
[[nodiscard]] std::vector<std::string> tiktok_match_keys(const nlohmann::json& event);

// TikTok's response envelope {"code", "message", "request_id", "data"}.
struct tiktok_response {
  long long code = 0;
  std::string message;
  std::string request_id;
};

// nullopt when the body has no integer "code".
[[nodiscard]] std::optional<tiktok_response> parse_tiktok_response(std::string_view body);

enum class tiktok_code_action { delivered, retry, pause_destination, reject_batch };

[[nodiscard]] tiktok_code_action tiktok_action_for(long long code);

// "TikTok code 40002: <message> [request_id ...]", one line.
[[nodiscard]] std::string tiktok_error_text(const tiktok_response& response);

class tiktok_provider final : public provider {
 public:
  explicit tiktok_provider(tiktok_destination destination);

  [[nodiscard]] std::string_view kind() const override { return "tiktok"; }
  [[nodiscard]] std::size_t max_batch_size() const override { return destination_.batch_size; }
  // Canonical parse errors; web destinations need event_source_url (page.url).
  [[nodiscard]] preparation prepare(const outbound_event& event,
                                    std::chrono::system_clock::time_point now) const override;
  // Throws std::invalid_argument for an event validate() would refuse.
  [[nodiscard]] http_request build_request(std::span<const outbound_event> events,
                                           std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] batch_outcome classify(std::span<const outbound_event> events, const http_result& result,
                                       std::chrono::system_clock::time_point now) const override;

  [[nodiscard]] const tiktok_destination& destination() const { return destination_; }

 private:
  tiktok_destination destination_;
};

}  // namespace outbox::providers

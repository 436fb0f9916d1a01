#pragma once
// The contract between the engine and one provider (webhook, Meta, TikTok,
// Google...). A provider is pure: it turns events into one HTTP request and
// turns the result back into one outcome per event. It knows nothing of SQL.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/http_types.hpp"

namespace outbox::providers {

// One claimed row, as a provider sees it. The payload and key are frozen at insert.
struct outbound_event {
  std::int64_t row_id = 0;
  std::string idempotency_key;  // the provider's dedup id on every attempt
  std::string event_name;
  std::int64_t lead_project_id = 0;
  nlohmann::json payload;  // always a JSON object (the engine rejects others before this)
  // The payload exactly as stored (PostgreSQL's canonical jsonb text) when it came
  // from the database; providers that send it unchanged use these bytes as is.
  std::string payload_text;
  std::int32_t attempt = 1;  // 1 for the first attempt
};

enum class outcome_kind {
  delivered,  // the provider accepted it (or told us it already had it)
  retry,      // transient: try again later with backoff (or at retry_after)
  dead,       // permanent: never retry; `error` says why
};

struct event_outcome {
  outcome_kind kind = outcome_kind::retry;
  std::string error;  // empty when delivered
  std::optional<std::chrono::seconds> retry_after;  // provider's own hint, if any
  // The whole batch was refused because of another event in it (Meta code 100,
  // all-or-nothing batches): send this event again at once in a request of its
  // own, without counting an attempt. Ignored for a batch of one.
  bool resend_alone = false;
};

struct batch_outcome {
  std::vector<event_outcome> events;  // one per event, in request order
  // Set when the destination itself is unusable (bad token, no permission): the
  // engine pauses the destination and retries these rows later without counting
  // the attempt against them.
  std::optional<std::string> pause_destination;
  // The access token was refused (HTTP 401 with OAuth): the engine refreshes the
  // token and resends the batch once before treating it as pause_destination.
  bool reauthenticate = false;
};

// OAuth2 refresh-token grant (Google). The engine fetches and caches the access
// token and adds `Authorization: Bearer <token>` to every request it builds.
struct oauth_settings {
  std::string token_url = "https://oauth2.googleapis.com/token";
  std::string client_id;
  std::string client_secret;
  std::string refresh_token;
};

class provider {
 public:
  virtual ~provider() = default;

  // Provider kind as stored in event_delivery.provider, e.g. "webhook".
  [[nodiscard]] virtual std::string_view kind() const = 0;
  // Most events one request may carry (1 for providers without batching).
  [[nodiscard]] virtual std::size_t max_batch_size() const = 0;
  // Checks an event before any request; an error text makes the row dead at once.
  [[nodiscard]] virtual std::optional<std::string> validate(const outbound_event& event,
                                                            std::chrono::system_clock::time_point now) const = 0;
  // Builds the request for a batch of already validated events (1..max_batch_size).
  [[nodiscard]] virtual http_request build_request(std::span<const outbound_event> events,
                                                    std::chrono::system_clock::time_point now) const = 0;
  // Judges the result; returns exactly one outcome per event.
  [[nodiscard]] virtual batch_outcome classify(std::span<const outbound_event> events,
                                               const http_result& result) const = 0;

  // OAuth2 settings when requests need a bearer token; nullptr otherwise.
  [[nodiscard]] virtual const oauth_settings* oauth() const { return nullptr; }
  // True when a row whose previous lease expired mid-request must not be resent
  // automatically but moved to `held` for on-call review (for providers whose
  // server-to-server dedup is not documented, e.g. Meta). `requeue` releases it.
  [[nodiscard]] virtual bool hold_reclaimed() const { return false; }
};

}  // namespace outbox::providers

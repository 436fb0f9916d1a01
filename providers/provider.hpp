#pragma once
// The contract between the engine and one provider (webhook, Meta, TikTok,
// Google...). A provider is pure: it turns events into one HTTP request and
// turns the result back into one outcome per event. It knows nothing of SQL.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/canonical_event.hpp"
#include "providers/dropped_field.hpp"
#include "providers/http/http_types.hpp"

namespace outbox::providers {

// What a provider worked out about one event in prepare() (the parsed payload,
// hashed identifiers, the event's JSON): handed back to build_request() and
// classify() so nothing is parsed or hashed twice. Each provider derives its own.
class prepared_state {
 public:
  virtual ~prepared_state() = default;
};

// One claimed row, as a provider sees it. The payload and key are frozen at insert.
struct outbound_event {
  std::int64_t row_id = 0;
  std::string idempotency_key;  // the provider's dedup id on every attempt
  std::string event_name;
  std::int64_t lead_project_id = 0;
  // Always a JSON object (the engine rejects others before this); left null for
  // a provider that does not read it (provider::reads_payload).
  nlohmann::json payload;
  // The payload exactly as stored (PostgreSQL's canonical jsonb text) when it came
  // from the database; providers that send it unchanged use these bytes as is.
  std::string payload_text;
  std::int32_t attempt = 1;  // 1 for the first attempt
  // Set by the engine from provider::prepare(); null when a caller skipped it
  // (build_request then prepares the event itself). Once it is set, build_request
  // and classify read only it: the engine frees `payload` and `payload_text`.
  std::shared_ptr<const prepared_state> prepared;
};

// A provider's verdict on one event before any request.
struct preparation {
  std::optional<std::string> error;     // the row can never be sent as it is: dead at once
  dropped_fields dropped;               // fields left out of the request, with why
  std::vector<std::string> match_keys;  // the match keys the request carries (match_keys.hpp)
  std::shared_ptr<const prepared_state> state;
};

// Processing result of an accepted request, for providers that process
// asynchronously (Google Data Manager): read later from a status endpoint.
enum class request_state { processing, success, partial_success, failure, unknown };
[[nodiscard]] std::string_view to_string(request_state s);  // "PROCESSING", "SUCCESS", ...

struct request_status {
  request_state state = request_state::unknown;
  std::string detail;        // the provider's counts and reasons, one line
  bool retry_later = false;  // the status could not be read now (network, 5xx, 429): ask again
  // The provider refused the read for its quota (429 RESOURCE_EXHAUSTED): no
  // request of the same status_quota_scope() is read until this long has passed
  // (Google's RetryInfo; zero: the reconciler's own back-off decides).
  std::optional<std::chrono::seconds> quota_exhausted;
};

enum class outcome_kind {
  delivered,  // the provider accepted it (or told us it already had it)
  retry,      // transient: try again later with backoff (or at retry_after)
  dead,       // permanent: never retry; `error` says why
};

struct event_outcome {
  outcome_kind kind = outcome_kind::retry;
  std::string error;                                // empty when delivered
  std::optional<std::chrono::seconds> retry_after;  // provider's own hint, if any
  // The whole batch was refused because of another event in it (Meta code 100,
  // all-or-nothing batches): send this event again at once in a request of its
  // own, without counting an attempt. Ignored for a batch of one.
  bool resend_alone = false;
  // Nonzero: the same, but in one request with the other events of this batch
  // that carry the same group (the rest of a batch refused for one named event;
  // a half of a batch refused without one, resend_in_halves). The engine does not
  // resend a group that is the whole batch again: it would be refused the same way.
  std::uint32_t resend_group = 0;
  // Delivered, but the provider said it could not use these optional fields
  // (Data Manager's fieldWarnings since v1.8): recorded like dropped fields, with
  // the provider's path without indices ("user_data.user_identifiers") and reason.
  dropped_fields warnings;
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
  // The provider's id for an accepted request whose processing result comes
  // later (provider::status_request); empty for synchronous providers.
  std::string request_id;
};

// An all-or-nothing batch was refused and no event was named: `which` (indices
// into out.events) go again at once, without an attempt, as two requests of
// about half each, `error` as their note. Halving finds one bad event among n in
// at most 2 * ceil(log2 n) more requests, half of them refused, where resending
// each alone costs n; a platform that rates an app by its error share (Meta)
// sees about log2 n refusals for one poison event.
void resend_in_halves(batch_outcome& out, std::span<const std::size_t> which, const std::string& error);

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
  // Checks and maps an event before any request: an error makes the row dead at
  // once; fields the provider cannot use are dropped, not fatal.
  [[nodiscard]] virtual preparation prepare(const outbound_event& event,
                                            std::chrono::system_clock::time_point now) const = 0;
  // prepare()'s error alone.
  [[nodiscard]] std::optional<std::string> validate(const outbound_event& event,
                                                    std::chrono::system_clock::time_point now) const {
    return prepare(event, now).error;
  }
  // Builds the request for a batch of already validated events (1..max_batch_size).
  [[nodiscard]] virtual http_request build_request(std::span<const outbound_event> events,
                                                   std::chrono::system_clock::time_point now) const = 0;
  // Judges the result; returns exactly one outcome per event. `now` dates a
  // Retry-After given as a date (the engine's clock, so tests can fix it).
  [[nodiscard]] virtual batch_outcome classify(std::span<const outbound_event> events, const http_result& result,
                                               std::chrono::system_clock::time_point now) const = 0;

  // False for providers that send the stored payload text unchanged and never
  // read outbound_event::payload: the engine then skips parsing it.
  [[nodiscard]] virtual bool reads_payload() const { return true; }
  // OAuth2 settings when requests need a bearer token; nullptr otherwise.
  [[nodiscard]] virtual const oauth_settings* oauth() const { return nullptr; }
  // True when a row whose previous lease expired mid-request must not be resent
  // automatically but moved to `held` for on-call review (for providers whose
  // server-to-server dedup is not documented, e.g. Meta). `requeue` releases it.
  [[nodiscard]] virtual bool hold_reclaimed() const { return false; }
  // The API version the requests are pinned to ("v27.0"), for its sunset
  // (providers/api_versions.hpp); empty for an API without versions in the URL.
  [[nodiscard]] virtual std::string_view api_version() const { return {}; }

  // Asynchronous processing (batch_outcome::request_id): the request that reads
  // a request's status, nullopt for providers without one.
  [[nodiscard]] virtual std::optional<http_request> status_request(std::string_view /*request_id*/) const {
    return std::nullopt;
  }
  [[nodiscard]] virtual request_status read_status(const http_result& /*result*/) const { return {}; }
  // How long after acceptance the first status check makes sense, and between checks.
  [[nodiscard]] virtual std::chrono::seconds status_check_delay() const { return std::chrono::minutes{30}; }
  // What shares a status-read quota with this destination (Google: the Cloud
  // project of its OAuth client): a RESOURCE_EXHAUSTED pauses the reads of every
  // destination with the same scope. Empty: its own.
  [[nodiscard]] virtual std::string status_quota_scope() const { return {}; }
};

// The start of every platform's prepare(): the row's payload as the canonical
// event, with the fields parsing dropped recorded in `out`; nullopt, with
// out.error set, when the payload cannot be one.
[[nodiscard]] std::optional<canonical_event> canonical_event_of(const outbound_event& event, preparation& out);

// The provider's own prepared state of `event`, or nullptr when there is none.
template <class State>
[[nodiscard]] const State* prepared_as(const outbound_event& event) {
  return dynamic_cast<const State*>(event.prepared.get());
}

// What every batching provider's build_request does first: hands `each` the
// prepared state of every event of the batch, the one made at claim time or,
// without it, a new prepare(). A batch holds only events prepare() accepted, so
// a refusal now is the caller's error (the sender makes the batch dead).
template <class State, class Each>
void for_each_prepared(const provider& p, std::span<const outbound_event> events,
                       std::chrono::system_clock::time_point now, Each each) {
  if (events.empty() || events.size() > p.max_batch_size()) {
    throw std::invalid_argument(std::string(p.kind()) + " build_request: " + std::to_string(events.size()) +
                                " events, outside 1.." + std::to_string(p.max_batch_size()));
  }
  for (const auto& event : events) {
    if (const auto* ready = prepared_as<State>(event)) {
      each(*ready);
      continue;
    }
    const auto again = p.prepare(event, now);
    if (again.error) {
      throw std::invalid_argument(std::string(p.kind()) + " build_request: row " + std::to_string(event.row_id) + ": " +
                                  *again.error);
    }
    each(static_cast<const State&>(*again.state));
  }
}

}  // namespace outbox::providers

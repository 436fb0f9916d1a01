#pragma once
// The generic `webhook` provider: POSTs each row's payload as JSON to a configured
// URL, signed per the Standard Webhooks specification (standardwebhooks.com):
//   webhook-id: <idempotency key>   webhook-timestamp: <unix seconds>
//   webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>
// plus `idempotency-key: <key>` for receivers that follow the IETF draft instead.
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "providers/crypto.hpp"
#include "providers/http/http_types.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

struct webhook_destination {
  std::string url;            // http:// or https://
  std::string secret;         // empty: requests are not signed
  header_list extra_headers;  // sent as given; never override the headers we set
};

// The HMAC key for a configured secret. "whsec_<base64>" (how Standard Webhooks
// serializes secrets, and what Svix and its receiver libraries hand out) is
// base64-decoded; any other string is used as its raw bytes. Note: the reference
// libraries also base64-decode a secret given without the prefix; we do not, so a
// plain passphrase works as typed. nullopt when "whsec_" is followed by bad base64.
[[nodiscard]] std::optional<std::string> webhook_signing_key(std::string_view secret);

// "v1," + base64(HMAC-SHA256(key, msg_id + "." + timestamp + "." + body)).
[[nodiscard]] std::string standard_webhooks_signature(std::string_view key, std::string_view msg_id,
                                                      std::int64_t unix_seconds, std::string_view body);

class webhook_provider final : public provider {
 public:
  // Throws std::invalid_argument for a malformed whsec_ secret (config validation
  // reports it earlier, so this only guards programming errors).
  explicit webhook_provider(webhook_destination destination);

  [[nodiscard]] std::string_view kind() const override { return "webhook"; }
  [[nodiscard]] std::size_t max_batch_size() const override { return 1; }
  [[nodiscard]] bool reads_payload() const override { return false; }
  [[nodiscard]] preparation prepare(const outbound_event& event,
                                    std::chrono::system_clock::time_point now) const override;
  // The body is payload_text (the row's jsonb text as PostgreSQL prints it) or,
  // for an event built in code, payload.dump(); either way every attempt sends
  // byte-identical content. Only the timestamp and signature change per attempt.
  [[nodiscard]] http_request build_request(std::span<const outbound_event> events,
                                           std::chrono::system_clock::time_point now) const override;
  [[nodiscard]] batch_outcome classify(std::span<const outbound_event> events, const http_result& result,
                                       std::chrono::system_clock::time_point now) const override;

 private:
  // Why the event cannot go as a webhook (key unusable in a header, payload not an object).
  [[nodiscard]] static std::optional<std::string> check(const outbound_event& event);
  webhook_destination destination_;
  std::optional<hmac_sha256_signer> signer_;  // empty: no secret configured
};

// Settings of a `webhook` destination, as the dispatcher configuration holds them
// (lower-case key -> value). Generic limits (concurrency, rate...) and headers are
// validated by the configuration itself.
inline constexpr std::array<std::string_view, 2> webhook_setting_keys{"url", "secret"};

// One (key, problem) pair per problem; never echoes the secret.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> validate_webhook_settings(
    const std::map<std::string, std::string>& settings);

[[nodiscard]] webhook_destination make_webhook_destination(const std::map<std::string, std::string>& settings,
                                                           header_list extra_headers);

}  // namespace outbox::providers

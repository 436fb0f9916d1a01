#include "providers/webhook/webhook_provider.hpp"

#include <algorithm>
#include <stdexcept>

#include "providers/crypto.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/setting_checks.hpp"
#include "providers/user_data/unicode_text.hpp"

namespace outbox::providers {
namespace {

constexpr std::string_view secret_prefix = "whsec_";

bool starts_with_icase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// Headers this provider owns; configured extra headers with these names are dropped.
constexpr std::array<std::string_view, 5> own_headers{"content-type", "webhook-id", "webhook-timestamp",
                                                      "webhook-signature", "idempotency-key"};

using setting_checks::setting;

}  // namespace

std::optional<std::string> webhook_signing_key(std::string_view secret) {
  if (secret.starts_with(secret_prefix)) return base64_decode(secret.substr(secret_prefix.size()));
  return std::string{secret};
}

std::string standard_webhooks_signature(std::string_view key, std::string_view msg_id, std::int64_t unix_seconds,
                                        std::string_view body) {
  std::string content;
  content.reserve(msg_id.size() + body.size() + 24);
  content.append(msg_id).append(".").append(std::to_string(unix_seconds)).append(".").append(body);
  return "v1," + base64_encode(hmac_sha256(key, content));
}

webhook_provider::webhook_provider(webhook_destination destination) : destination_(std::move(destination)) {
  if (!destination_.secret.empty()) {
    const auto key = webhook_signing_key(destination_.secret);
    if (!key) throw std::invalid_argument("webhook secret: text after whsec_ is not valid base64");
    signer_.emplace(*key);
  }
}

preparation webhook_provider::prepare(const outbound_event& event,
                                      std::chrono::system_clock::time_point /*now*/) const {
  return preparation{check(event), {}, {}, nullptr};
}

std::optional<std::string> webhook_provider::check(const outbound_event& event) {
  const std::string_view key = event.idempotency_key;
  if (key.empty()) return "idempotency key is empty";
  // The key is a header value and part of the signed content, where '.' separates fields.
  const bool bad_char = std::any_of(key.begin(), key.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b <= 0x20 || b >= 0x7f || c == '.';
  });
  if (bad_char) return "idempotency key must be printable ASCII without spaces or '.'";
  if (!event.payload_text.empty()) {
    // The row's jsonb text: valid JSON by construction, an object starts with '{'.
    // UTF-8 only in a UTF8 database (a SQL_ASCII one stores any bytes), so check it.
    const auto first = event.payload_text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || event.payload_text[first] != '{') return "payload is not a JSON object";
    if (!unicode::is_valid_utf8(event.payload_text)) return "payload contains a string that is not valid UTF-8";
    return std::nullopt;
  }
  if (!event.payload.is_object()) return "payload is not a JSON object";
  try {
    (void)event.payload.dump();
  } catch (const nlohmann::json::type_error&) {
    return "payload contains a string that is not valid UTF-8";
  }
  return std::nullopt;
}

http_request webhook_provider::build_request(std::span<const outbound_event> events,
                                             std::chrono::system_clock::time_point now) const {
  if (events.size() != 1) throw std::logic_error("webhook_provider::build_request takes exactly one event");
  const outbound_event& event = events.front();
  const std::int64_t timestamp = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();

  http_request request;
  request.method = "POST";
  request.url = destination_.url;
  // validate() rejected bad UTF-8; `replace` keeps this total without changing valid output.
  request.body = !event.payload_text.empty()
                     ? event.payload_text
                     : event.payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  request.headers.reserve(own_headers.size() + destination_.extra_headers.size());  // no regrowth
  request.headers.emplace_back("content-type", "application/json");
  request.headers.emplace_back("webhook-id", event.idempotency_key);
  request.headers.emplace_back("webhook-timestamp", std::to_string(timestamp));
  if (signer_) {
    const std::string ts = std::to_string(timestamp);
    request.headers.emplace_back(
        "webhook-signature", "v1," + base64_encode(signer_->sign({event.idempotency_key, ".", ts, ".", request.body})));
  }
  request.headers.emplace_back("idempotency-key", event.idempotency_key);
  for (const auto& header : destination_.extra_headers) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::string& name = header.first;
    const bool ours =
        std::any_of(own_headers.begin(), own_headers.end(), [&](std::string_view own) { return iequals(own, name); });
    if (!ours) request.headers.push_back(header);
  }
  return request;
}

batch_outcome webhook_provider::classify(std::span<const outbound_event> events, const http_result& result,
                                         std::chrono::system_clock::time_point now) const {
  return uniform_outcome(events.size(), result, now);
}

std::vector<std::pair<std::string, std::string>> validate_webhook_settings(
    const std::map<std::string, std::string>& settings) {
  std::vector<std::pair<std::string, std::string>> problems;
  const std::string_view url = setting(settings, "url");
  if (url.empty()) {
    problems.emplace_back("url", "is required (the receiver's http:// or https:// URL)");
  } else {
    const std::string_view scheme = starts_with_icase(url, "https://")  ? "https://"
                                    : starts_with_icase(url, "http://") ? "http://"
                                                                        : "";
    const std::string_view rest = url.substr(scheme.size());
    const bool bad_char = std::any_of(url.begin(), url.end(), [](char c) {
      const auto b = static_cast<unsigned char>(c);
      return b <= 0x20 || b == 0x7f;
    });
    if (scheme.empty()) {
      problems.emplace_back("url", "must start with https:// or http://");
    } else if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#') {
      problems.emplace_back("url", "has no host name");
    } else if (bad_char) {
      problems.emplace_back("url", "contains spaces or control characters");
    }
  }
  const std::string_view secret = setting(settings, "secret");
  if (secret.starts_with(secret_prefix) && !webhook_signing_key(secret)) {
    problems.emplace_back("secret", "text after whsec_ is not valid base64");
  } else if (secret.starts_with(secret_prefix) && secret.size() == secret_prefix.size()) {
    problems.emplace_back("secret", "whsec_ is followed by no key");
  }
  return problems;
}

webhook_destination make_webhook_destination(const std::map<std::string, std::string>& settings,
                                             header_list extra_headers) {
  return webhook_destination{std::string{setting(settings, "url")}, std::string{setting(settings, "secret")},
                             std::move(extra_headers)};
}

}  // namespace outbox::providers

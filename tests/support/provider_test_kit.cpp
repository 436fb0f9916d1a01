#include "tests/support/provider_test_kit.hpp"

namespace outbox::test {

providers::outbound_event test_event(nlohmann::json payload, std::string key, std::string event_name,
                                     std::int64_t row_id) {
  providers::outbound_event e;
  e.row_id = row_id;
  e.idempotency_key = std::move(key);
  e.event_name = std::move(event_name);
  e.lead_project_id = row_id;
  e.payload = std::move(payload);
  return e;
}

std::vector<providers::outbound_event> test_batch(std::size_t n, const nlohmann::json& payload,
                                                  std::string event_name) {
  std::vector<providers::outbound_event> events;
  events.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    events.push_back(test_event(payload, "key-" + std::to_string(i), event_name, static_cast<std::int64_t>(i + 1)));
  }
  return events;
}

providers::http_result reply(int status, std::string body, providers::header_list headers) {
  providers::http_result r;
  r.response = providers::http_response{status, std::move(headers), std::move(body)};
  return r;
}

providers::http_result transport_failure(providers::transport_error error, std::string message) {
  providers::http_result r;
  r.error = error;
  r.error_message = std::move(message);
  return r;
}

std::optional<std::string> header_of(const providers::http_request& request, std::string_view name) {
  for (const auto& [n, v] : request.headers) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::string dropped_reason(const providers::preparation& prepared, std::string_view field) {
  for (const auto& d : prepared.dropped) {
    if (d.field == field) return d.reason;
  }
  return {};
}

std::vector<std::optional<std::size_t>> sequential(std::size_t n) {
  std::vector<std::optional<std::size_t>> rows;
  for (std::size_t i = 0; i < n; ++i) rows.emplace_back(i);
  return rows;
}

std::map<std::string, std::string> good_google_settings(std::string_view account_key) {
  return {{std::string{account_key}, "123-456-7890"},
          {"conversion_action_id", "987654"},
          {"client_id", "cid.apps.googleusercontent.com"},
          {"client_secret", "s3cr3t-value"},
          {"refresh_token", "1//refresh-value"}};
}

}  // namespace outbox::test

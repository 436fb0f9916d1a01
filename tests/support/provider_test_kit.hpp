#pragma once
// What provider tests build again and again: a claimed row, a batch of them,
// an HTTP answer, a header's value, and the settings of a working Google
// destination. One home, so a test says only what is special about its case.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/provider.hpp"

namespace outbox::test {

// 2026-01-01T01:00:00Z: the fixed "now" of provider tests.
inline const std::chrono::system_clock::time_point provider_test_now =
    std::chrono::system_clock::time_point{} + std::chrono::seconds{1767229200};

// One claimed row: `payload` as the row's frozen payload, `key` as its idempotency key.
[[nodiscard]] providers::outbound_event test_event(nlohmann::json payload, std::string key = "key-1",
                                                   std::string event_name = "Lead", std::int64_t row_id = 1);
// `n` rows with the same payload and keys key-0, key-1, ...; row ids 1..n.
[[nodiscard]] std::vector<providers::outbound_event> test_batch(std::size_t n, const nlohmann::json& payload,
                                                                std::string event_name = "Lead");
// An answer the server gave.
[[nodiscard]] providers::http_result reply(int status, std::string body = {}, providers::header_list headers = {});
// A transport failure (no answer).
[[nodiscard]] providers::http_result transport_failure(providers::transport_error error,
                                                       std::string message = "test failure");
// The first value of header `name` (lower case) in a request.
[[nodiscard]] std::optional<std::string> header_of(const providers::http_request& request, std::string_view name);
// The reason of the dropped field `field` in a preparation, empty when it was kept.
[[nodiscard]] std::string dropped_reason(const providers::preparation& prepared, std::string_view field);

// The request rows of a Google batch where every event was sent: 0..n-1.
[[nodiscard]] std::vector<std::optional<std::size_t>> sequential(std::size_t n);

// Settings of a Google destination that validate: `account_key` is "customer_id"
// (google_ads) or "account_id" (google_data_manager).
[[nodiscard]] std::map<std::string, std::string> good_google_settings(std::string_view account_key);

}  // namespace outbox::test

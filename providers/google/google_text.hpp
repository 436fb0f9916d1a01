#pragma once
// Small text helpers for the Google provider files (google_*.cpp); iequals is
// providers/http/http_types.hpp's, setting() providers/setting_checks.hpp's.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace outbox::providers::google_detail {

// Without leading and trailing spaces and tabs.
[[nodiscard]] inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// object[key] when it is a string, else "".
[[nodiscard]] inline std::string string_or_empty(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace outbox::providers::google_detail

#pragma once
// Small text helpers for the Google provider files (google_*.cpp).
#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace outbox::providers::google_detail {

[[nodiscard]] inline bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    return lower(x) == lower(y);
  });
}

// The value of `key`, "" when absent.
[[nodiscard]] inline std::string_view setting(const std::map<std::string, std::string>& settings, std::string_view key) {
  const auto it = settings.find(std::string{key});
  return it == settings.end() ? std::string_view{} : std::string_view{it->second};
}

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

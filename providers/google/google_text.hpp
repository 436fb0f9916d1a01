#pragma once
// Small JSON helpers for the Google provider files (google_*.cpp); the text
// helpers are providers/text.hpp's, setting() providers/setting_checks.hpp's.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "providers/text.hpp"

namespace outbox::providers::google_detail {

// object[key] when it is a string, else "".
[[nodiscard]] inline std::string string_or_empty(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace outbox::providers::google_detail

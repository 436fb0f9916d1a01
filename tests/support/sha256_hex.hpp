#pragma once
// What the provider fakes accept as a hashed user data value: a lower-case SHA-256 in hex.
#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

namespace outbox::test {

[[nodiscard]] inline bool is_sha256_hex(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace outbox::test

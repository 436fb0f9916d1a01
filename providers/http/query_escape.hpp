#pragma once
// Percent-encoding of a query-string value (RFC 3986: unreserved characters stay).
#include <string>
#include <string_view>

namespace outbox::providers {

[[nodiscard]] inline std::string query_escape(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    const bool plain = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || c == '-' ||
                       c == '_' || c == '.' || c == '~';
    if (plain) {
      out.push_back(c);
    } else {
      out += {'%', hex[b >> 4], hex[b & 15]};
    }
  }
  return out;
}

}  // namespace outbox::providers

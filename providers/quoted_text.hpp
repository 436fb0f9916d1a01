#pragma once
// A value quoted inside an error message: at most `max_bytes` bytes cut on a
// UTF-8 character boundary (a cut inside a character would make the message
// invalid UTF-8, which PostgreSQL refuses to store), control characters shown
// as '?', "..." when cut. Shared by every provider's validation messages.
#include <cstddef>
#include <string>
#include <string_view>

namespace outbox::providers {

[[nodiscard]] inline std::string quoted_excerpt(std::string_view value, std::size_t max_bytes = 60) {
  std::size_t cut = value.size();
  if (cut > max_bytes) {
    cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out;
  out.reserve(cut + 3);
  for (const char c : value.substr(0, cut)) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(b < 0x20 || b == 0x7f ? '?' : c);
  }
  if (cut < value.size()) out += "...";
  return out;
}

}  // namespace outbox::providers

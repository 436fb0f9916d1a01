#include "dispatcher/ops/terminal_text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

namespace outbox {
namespace {

struct decoded {
  char32_t code_point;
  std::size_t length;
};

[[nodiscard]] bool continuation(unsigned char b, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
  return b >= lo && b <= hi;
}

// The UTF-8 sequence at the start of `s` (not empty), or nullopt when its first
// byte does not start a valid one (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF).
std::optional<decoded> decode(std::string_view s) {
  const auto byte = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0; };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return decoded{b0, 1};
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!continuation(byte(1))) return std::nullopt;
    return decoded{static_cast<char32_t>(((b0 & 0x1Fu) << 6) | (byte(1) & 0x3Fu)), 2};
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    // The second byte's range excludes overlong forms (E0) and surrogates (ED).
    const unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = b0 == 0xED ? 0x9F : 0xBF;
    if (!continuation(byte(1), lo, hi) || !continuation(byte(2))) return std::nullopt;
    return decoded{static_cast<char32_t>(((b0 & 0x0Fu) << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu)), 3};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    // Overlong forms (F0) and code points past U+10FFFF (F4) excluded.
    const unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (!continuation(byte(1), lo, hi) || !continuation(byte(2)) || !continuation(byte(3))) return std::nullopt;
    return decoded{static_cast<char32_t>(((b0 & 0x07u) << 18) | ((byte(1) & 0x3Fu) << 12) | ((byte(2) & 0x3Fu) << 6) |
                                         (byte(3) & 0x3Fu)),
                   4};
  }
  return std::nullopt;  // a continuation byte, C0/C1 (overlong), or F5..FF
}

std::string hex_escape(const char* prefix, std::uint32_t value, int digits) {
  static constexpr std::array<char, 16> hex{'0', '1', '2', '3', '4', '5', '6', '7',
                                            '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string out{prefix};
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out.push_back(hex[(value >> shift) & 0xFu]);
  return out;
}

[[nodiscard]] bool reorders_text(char32_t c) { return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069); }

// The visible form of one valid character, or nullopt to keep it as it is.
std::optional<std::string> escape_for(char32_t c) {
  switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (c < 0x20 || c == 0x7F) return hex_escape("\\x", c, 2);
  if ((c >= 0x80 && c <= 0x9F) || reorders_text(c)) return hex_escape("\\u", c, 4);
  return std::nullopt;
}

}  // namespace

std::string terminal_text(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  while (!text.empty()) {
    std::string piece;
    std::size_t consumed = 1;
    if (const auto d = decode(text)) {
      consumed = d->length;
      const auto escaped = escape_for(d->code_point);
      piece = escaped ? *escaped : std::string{text.substr(0, d->length)};
    } else {
      piece = hex_escape("\\x", static_cast<unsigned char>(text.front()), 2);
    }
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    text.remove_prefix(consumed);
  }
  return out;
}

}  // namespace outbox

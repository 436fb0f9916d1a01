#include "db/text_param.hpp"

#include <algorithm>

namespace outbox::db {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view ellipsis = "...";

// Length of the valid UTF-8 sequence starting at text[i], or 0 if invalid
// (overlongs, surrogates and code points above U+10FFFF are invalid).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::size_t utf8_boundary(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

std::string clean_text(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 1 && text[i] == '\0') {
      ++i;
      continue;
    }
    if (n == 0) {
      out += replacement;
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
    if (out.size() > max_bytes) break;
  }
  if (out.size() <= max_bytes) return out;
  const std::size_t keep = max_bytes > ellipsis.size() ? max_bytes - ellipsis.size() : 0;
  out.resize(utf8_boundary(out, keep));
  if (max_bytes >= ellipsis.size()) out += ellipsis;
  return out;
}

nlohmann::json clean_json(const nlohmann::json& doc, std::size_t max_string_bytes) {
  if (doc.is_string()) return clean_text(doc.get_ref<const std::string&>(), max_string_bytes);
  if (doc.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : doc) out.push_back(clean_json(item, max_string_bytes));
    return out;
  }
  if (doc.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : doc.items())
      out[clean_text(key, max_string_bytes)] = clean_json(value, max_string_bytes);
    return out;
  }
  return doc;
}

}  // namespace outbox::db

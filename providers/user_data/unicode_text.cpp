// The parts of unicode_text.hpp that need no ICU library, only its UTF-8 macros
// (inline code): the executable has them without mapping libicuuc. Case mapping
// and the Unicode properties are in unicode_properties.cpp (the user data module).
#include "providers/user_data/unicode_text.hpp"

#include <unicode/utf8.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace outbox::providers::unicode {
namespace {

// ICU counts in int32_t; no CRM value comes near 2 GiB, but a fuzzer may try.
std::int32_t icu_length(std::string_view s) {
  return static_cast<std::int32_t>(std::min<std::size_t>(s.size(), std::numeric_limits<std::int32_t>::max()));
}

const std::uint8_t* bytes_of(std::string_view s) { return reinterpret_cast<const std::uint8_t*>(s.data()); }

// Calls f(code point, its bytes) for valid UTF-8 (what ICU's toUTF8String gives).
template <class F>
void for_each_code_point(std::string_view s, F&& f) {
  const std::int32_t length = icu_length(s);
  std::int32_t i = 0;
  while (i < length) {
    const std::int32_t start = i;
    UChar32 cp = 0;
    U8_NEXT(bytes_of(s), i, length, cp);
    if (cp < 0) cp = 0xFFFD;
    f(static_cast<char32_t>(cp), s.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(i - start)));
  }
}

}  // namespace

std::string_view trim(std::string_view text) {
  // Forward only: U8_PREV would call into libicuuc (utf8_prevCharSafeBody).
  const std::int32_t length = icu_length(text);
  std::int32_t begin = -1;  // the first code point that is not blank
  std::int32_t end = 0;     // just after the last one
  for (std::int32_t i = 0; i < length;) {
    const std::int32_t start = i;
    UChar32 cp = 0;
    U8_NEXT(bytes_of(text), i, length, cp);
    if (cp >= 0 && is_blank(static_cast<char32_t>(cp))) continue;
    if (begin < 0) begin = start;
    end = i;
  }
  if (begin < 0) return text.substr(0, 0);
  return text.substr(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
}

bool is_valid_utf8(std::string_view text) {
  const std::int32_t length = icu_length(text);
  if (static_cast<std::size_t>(length) != text.size()) return false;
  for (std::int32_t i = 0; i < length;) {
    UChar32 cp = 0;
    U8_NEXT(bytes_of(text), i, length, cp);
    if (cp < 0) return false;
  }
  return true;
}

std::string lower_filtered(std::string_view raw, bool (*drop)(char32_t), inner_blanks blanks) {
  const std::string lower = to_lower(trim(raw));
  std::string out;
  out.reserve(lower.size());
  std::string pending_blanks;  // the blanks since the last kept code point, as written
  for_each_code_point(lower, [&](char32_t cp, std::string_view bytes) {
    if (is_blank(cp)) {
      pending_blanks.append(bytes);
      return;
    }
    if (drop(cp)) return;
    if (!pending_blanks.empty() && !out.empty()) {
      if (blanks == inner_blanks::one_space) out.push_back(' ');
      if (blanks == inner_blanks::keep) out.append(pending_blanks);
    }
    pending_blanks.clear();
    out.append(bytes);
  });
  return out;
}

std::string match_key(std::string_view utf8) {
  // ASCII folds to its letters and digits, lower-cased: what fold_for_match gives
  // it, without ICU's transliterator (libicui18n, loaded with the user data
  // module; building it takes milliseconds and about a megabyte).
  if (std::all_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    std::string out;
    out.reserve(utf8.size());
    for (const char c : utf8) {
      if (c >= 'A' && c <= 'Z') out.push_back(static_cast<char>(c - 'A' + 'a'));
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out.push_back(c);
    }
    return out;
  }
  return fold_for_match(utf8);
}

}  // namespace outbox::providers::unicode

#include "providers/user_data/unicode_text.hpp"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
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

std::string to_lower(std::string_view utf8) {
  icu::UnicodeString text = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), icu_length(utf8)));
  text.toLower(icu::Locale::getRoot());
  std::string out;
  text.toUTF8String(out);
  return out;
}

bool is_blank(char32_t cp) { return cp == 0x200B || cp == 0xFEFF || u_isUWhiteSpace(static_cast<UChar32>(cp)) != 0; }

bool is_punctuation(char32_t cp) {
  if (cp < 0x80) {
    const bool alnum = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return cp >= 0x21 && cp <= 0x7E && !alnum;
  }
  return u_ispunct(static_cast<UChar32>(cp)) != 0;
}

std::string_view trim(std::string_view text) {
  const std::int32_t length = icu_length(text);
  std::int32_t begin = 0;
  while (begin < length) {
    std::int32_t next = begin;
    UChar32 cp = 0;
    U8_NEXT(bytes_of(text), next, length, cp);
    if (cp < 0 || !is_blank(static_cast<char32_t>(cp))) break;
    begin = next;
  }
  std::int32_t end = length;
  while (end > begin) {
    std::int32_t previous = end;
    UChar32 cp = 0;
    U8_PREV(bytes_of(text), begin, previous, cp);
    if (cp < 0 || !is_blank(static_cast<char32_t>(cp))) break;
    end = previous;
  }
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

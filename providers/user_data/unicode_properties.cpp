// The ICU library calls behind unicode_text.hpp: case mapping and two Unicode
// properties. Their own object file (CMakeLists.txt): the user data module has
// them, and the `dispatcher` executable calls them through it
// (providers/user_data/user_data_loader.cpp), so it does not map libicuuc (about
// 0.6 MB resident) when it only sends webhooks. Tests and tools link this file.
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "providers/user_data/unicode_text.hpp"

namespace outbox::providers::unicode {

std::string to_lower(std::string_view utf8) {
  // ICU counts in int32_t; no CRM value comes near 2 GiB, but a fuzzer may try.
  const auto length =
      static_cast<std::int32_t>(std::min<std::size_t>(utf8.size(), std::numeric_limits<std::int32_t>::max()));
  icu::UnicodeString text = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), length));
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

}  // namespace outbox::providers::unicode

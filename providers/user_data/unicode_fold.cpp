#include "providers/user_data/unicode_text.hpp"

#include <unicode/translit.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>

namespace outbox::providers::unicode {
namespace {

// The transliteration behind match_key, built once per thread (ICU transliterators
// are cheap to run and costly to build).
const icu::Transliterator& key_folding() {
  thread_local const std::unique_ptr<icu::Transliterator> folding = [] {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::Transliterator> made{icu::Transliterator::createInstance(
        "NFKD; [:Nonspacing Mark:] Remove; Latin-ASCII; Any-Lower", UTRANS_FORWARD, status)};
    if (U_FAILURE(status) || !made) {
      throw std::runtime_error(std::string{"ICU transliterator for match keys: "} + u_errorName(status));
    }
    return made;
  }();
  return *folding;
}

}  // namespace

std::string fold_for_match(std::string_view utf8) {
  // ICU counts in int32_t; no CRM value comes near 2 GiB, but a fuzzer may try.
  const auto length =
      static_cast<std::int32_t>(std::min<std::size_t>(utf8.size(), std::numeric_limits<std::int32_t>::max()));
  icu::UnicodeString text = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), length));
  key_folding().transliterate(text);
  icu::UnicodeString kept;
  for (std::int32_t i = 0; i < text.length(); i = text.moveIndex32(i, 1)) {
    const UChar32 cp = text.char32At(i);
    if (u_isalnum(cp)) kept.append(cp);
  }
  std::string out;
  kept.toUTF8String(out);
  return out;
}

}  // namespace outbox::providers::unicode

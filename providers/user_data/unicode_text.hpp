#pragma once
// Unicode text operations for user data normalization, done by ICU (Debian's
// libicu72) so that they match what the platforms' SDKs compute in JavaScript:
// String.prototype.toLowerCase is Unicode's full default case mapping, locale
// independent (final sigma, İ -> i̇, ẞ -> ß). No NFC/NFD normalization is applied
// to values that get hashed: the SDKs do not normalize either (docs/normalization.md).
// Input is UTF-8; invalid sequences become U+FFFD, as a JavaScript decoder does.
#include <string>
#include <string_view>

namespace outbox::providers::unicode {

// Full default lower-case mapping in the root locale (JavaScript's toLowerCase).
[[nodiscard]] std::string to_lower(std::string_view utf8);

// Unicode White_Space, plus ZERO WIDTH SPACE and BYTE ORDER MARK (invisible
// blanks that copy-and-paste leaves in CRM fields).
[[nodiscard]] bool is_blank(char32_t cp);

// ASCII: every printable character that is not a letter or a digit ("$", "+",
// "_" included, as the hand-written rule always did); beyond ASCII: the Unicode
// punctuation categories (P*), so symbols such as "×" are kept.
[[nodiscard]] bool is_punctuation(char32_t cp);

// `text` without blanks (is_blank) at either end.
[[nodiscard]] std::string_view trim(std::string_view text);

// True when every byte sequence is well-formed UTF-8 (ICU's U8_NEXT decides).
[[nodiscard]] bool is_valid_utf8(std::string_view text);

// How lower_filtered treats a run of blanks inside the value: removed, made one
// ASCII space, or kept as written (Google's names: "trim leading and trailing").
enum class inner_blanks { drop, one_space, keep };

// Trims, lower-cases the whole value (so final sigma sees its neighbours, as in
// JavaScript), then drops every code point `drop` accepts. Blanks at the ends
// always go; inside, they are dropped, collapsed to one ASCII space or kept.
[[nodiscard]] std::string lower_filtered(std::string_view raw, bool (*drop)(char32_t), inner_blanks blanks);

// A key for matching names against reference data, case- and accent-insensitive:
// compatibility-decomposed (fullwidth -> ASCII), marks removed, Latin letters
// transliterated to ASCII (đ -> d, ß -> ss, ø -> o), lower-cased, and only
// letters and digits kept. "Côte d’Ivoire" and "COTE DIVOIRE" give "cotedivoire".
[[nodiscard]] std::string match_key(std::string_view utf8);

// match_key by ICU's transliterator, for any text (match_key calls it for text
// that is not ASCII). It lives in providers/user_data/unicode_fold.cpp, apart from the rest,
// because it needs libicui18n: the dispatcher executable gets it from the user
// data module (providers/user_data/user_data_module.hpp), tests and tools link it in.
[[nodiscard]] std::string fold_for_match(std::string_view utf8);

}  // namespace outbox::providers::unicode

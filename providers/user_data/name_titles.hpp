#pragma once
// Honorifics before a given name and generational or academic suffixes after a
// family name, which Google's formatting rules leave out of the hashed names
// ("Don't include prefixes such as Mrs.", "Don't include suffixes such as Jr.").
// Both take a name already lower-cased with punctuation removed (normalize_name's
// first steps), so "Mrs." arrives as "mrs" and "Smith, Jr." as "smith jr".
#include <string>
#include <string_view>

namespace outbox::providers {

// "mrs mary" -> "mary", "dr mrs mary ann" -> "mary ann"; a name that is only a
// title ("miss") is kept, as nothing else would be left to match on.
[[nodiscard]] std::string without_name_prefixes(std::string_view lowered);

// "smith jr" -> "smith", "smith iii phd" -> "smith"; "jr" alone is kept.
[[nodiscard]] std::string without_name_suffixes(std::string_view lowered);

}  // namespace outbox::providers

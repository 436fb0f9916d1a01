#pragma once
// Phone numbers to E.164 with Google's libphonenumber (Debian's libphonenumber8,
// 8.12.57, metadata of late 2022): the library ad platforms themselves use for
// parsing, national trunk prefixes, "(0)", international call prefixes and
// extensions. See docs/normalization.md for the acceptance rule and why.
#include <optional>
#include <string>
#include <string_view>

namespace outbox::providers::phone {

struct e164_result {
  std::optional<std::string> e164;  // "+16505551212"; nullopt when unusable
  std::string detail;               // why unusable, one line without the number itself
};

// The libphonenumber region ("US") a national number is read in: the row's
// country (`row_country`, ISO alpha-2, either case) when libphonenumber knows it,
// else the destination default, a calling code ("1", "+44") or an alpha-2 ("FR");
// empty when neither gives one.
[[nodiscard]] std::string parsing_region(std::string_view row_country, std::string_view default_calling_code);

// `raw` as E.164, extension dropped. Accepted when libphonenumber parses it and
// finds its length possible for its country (IsPossibleNumber, which survives
// number ranges opened after the 2022 metadata). Without a region only numbers
// written with '+' or "00" parse, and bare digits are taken as already
// international only when libphonenumber finds them valid (a stricter test,
// because the country code is a guess). A leading "00" is also read as '+' when
// the region's own international prefix is another (011 in the US).
[[nodiscard]] e164_result to_e164(std::string_view raw, std::string_view row_country,
                                  std::string_view default_calling_code);

}  // namespace outbox::providers::phone

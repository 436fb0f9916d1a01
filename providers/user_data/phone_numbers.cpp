#include "providers/user_data/phone_numbers.hpp"

#include <phonenumbers/phonenumberutil.h>

#include <algorithm>
#include <unordered_map>

#include "providers/text.hpp"
#include "providers/user_data/unicode_text.hpp"

namespace outbox::providers::phone {
namespace {

using i18n::phonenumbers::PhoneNumber;
using i18n::phonenumbers::PhoneNumberUtil;

const PhoneNumberUtil& util() { return *PhoneNumberUtil::GetInstance(); }

std::string upper_ascii(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// "FR" when libphonenumber has metadata for it (GetCountryCodeForRegion is 0 otherwise).
std::string known_region(std::string_view alpha2) {
  if (alpha2.size() != 2) return {};
  std::string region = upper_ascii(alpha2);
  return util().GetCountryCodeForRegion(region) != 0 ? region : std::string{};
}

// "1" -> "US", "+44" -> "GB" (the main region of a shared calling code).
std::string region_for_calling_code(std::string_view code) {
  if (!code.empty() && code.front() == '+') code.remove_prefix(1);
  if (code.empty() || code.size() > 3 || !std::all_of(code.begin(), code.end(), is_ascii_digit)) return {};
  std::string region;
  util().GetRegionCodeForCountryCode(std::stoi(std::string{code}), &region);
  // "ZZ": no such code; "001": a non-geographic code (+800), which has no national numbers.
  return region.size() == 2 && region != "ZZ" ? region : std::string{};
}

std::string parse_error_detail(PhoneNumberUtil::ErrorType error, bool international, const std::string& region) {
  switch (error) {
    case PhoneNumberUtil::INVALID_COUNTRY_CODE_ERROR:
      return international || !region.empty() ? "unknown country calling code"
                                              : "no country code (+ or 00) and no region to read a national number in";
    case PhoneNumberUtil::NOT_A_NUMBER: return "not a phone number";
    case PhoneNumberUtil::TOO_SHORT_AFTER_IDD:
    case PhoneNumberUtil::TOO_SHORT_NSN: return "too short";
    case PhoneNumberUtil::TOO_LONG_NSN: return "too long";
    case PhoneNumberUtil::NO_PARSING_ERROR: break;
  }
  return "not a phone number";
}

std::string possibility_detail(PhoneNumberUtil::ValidationResult result) {
  switch (result) {
    case PhoneNumberUtil::IS_POSSIBLE_LOCAL_ONLY: return "a local number without its area code";
    case PhoneNumberUtil::INVALID_COUNTRY_CODE: return "unknown country calling code";
    case PhoneNumberUtil::TOO_SHORT: return "too short";
    case PhoneNumberUtil::TOO_LONG: return "too long";
    case PhoneNumberUtil::INVALID_LENGTH:
    case PhoneNumberUtil::IS_POSSIBLE: break;
  }
  return "impossible length";
}

std::string region_of(const PhoneNumber& number) {
  std::string region;
  util().GetRegionCodeForCountryCode(number.country_code(), &region);
  return region;
}

struct attempt {
  std::optional<PhoneNumber> number;
  std::string detail;
};

// Parses `text` in `region` ("" for none) and applies the acceptance rule.
attempt parse(const std::string& text, const std::string& region, bool must_be_valid) {
  PhoneNumber number;
  const auto error = util().Parse(text, region.empty() ? "ZZ" : region, &number);
  if (error != PhoneNumberUtil::NO_PARSING_ERROR) {
    const bool international = text.starts_with('+') && !must_be_valid;  // a '+' we added is not the writer's
    return {std::nullopt, parse_error_detail(error, international, region)};
  }
  if (must_be_valid) {
    if (util().IsValidNumber(number)) return {number, {}};
    return {std::nullopt, "no '+' and no region, and not a valid number with its country code"};
  }
  const auto possible = util().IsPossibleNumberWithReason(number);
  if (possible == PhoneNumberUtil::IS_POSSIBLE) return {number, {}};
  return {std::nullopt,
          "not a possible phone number for region " + region_of(number) + " (" + possibility_detail(possible) + ")"};
}

}  // namespace

std::string parsing_region(std::string_view row_country, std::string_view default_calling_code) {
  if (std::string region = known_region(row_country); !region.empty()) return region;
  const std::string_view code = unicode::trim(default_calling_code);
  if (std::string region = region_for_calling_code(code); !region.empty()) return region;
  return known_region(code);
}

namespace {

// "+" then the digits, appended: GCC 12 at -O3 reports a false -Wrestrict on
// `"+" + std::string`, which a user's Release build would print.
std::string with_plus(std::string_view digits) {
  std::string out;
  out.reserve(digits.size() + 1);
  out.push_back('+');
  out.append(digits);
  return out;
}

e164_result parse_to_e164(std::string_view raw, std::string_view row_country, std::string_view default_calling_code) {
  // Lower-casing only makes the text valid UTF-8 for the library ("EXT" reads as "ext").
  const std::string text = unicode::to_lower(unicode::trim(raw));
  const std::string region = parsing_region(row_country, default_calling_code);
  const bool double_zero = text.starts_with("00");
  attempt result;
  if (!region.empty()) {
    result = parse(text, region, false);
    // "00" is the international prefix most of the world writes, even where the
    // region's own is another (011 in North America): read it as '+' too.
    if (!result.number && double_zero) result = parse(with_plus(text.substr(2)), region, false);
  } else if (double_zero) {
    result = parse(with_plus(text.substr(2)), region, false);
  } else if (text.starts_with('+')) {
    result = parse(text, region, false);
  } else {
    result = parse(with_plus(text), region, true);  // bare digits: the country code is a guess
  }
  if (!result.number) return {std::nullopt, std::move(result.detail)};
  std::string e164;
  util().Format(*result.number, PhoneNumberUtil::E164, &e164);
  return {std::move(e164), {}};
}

}  // namespace

// libphonenumber's parse costs tens of microseconds; one lead's phone comes back
// for every provider and event it is sent to. Remembered per thread, bounded
// (cleared when full) so unique numbers cannot grow it without limit.
e164_result to_e164(std::string_view raw, std::string_view row_country, std::string_view default_calling_code) {
  constexpr std::size_t max_entries = 4096;
  thread_local std::unordered_map<std::string, e164_result> memo;
  std::string key;
  key.reserve(raw.size() + row_country.size() + default_calling_code.size() + 2);
  key.append(raw).append(1, '\x1f').append(row_country).append(1, '\x1f').append(default_calling_code);
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  auto result = parse_to_e164(raw, row_country, default_calling_code);
  if (memo.size() >= max_entries) memo.clear();
  memo.emplace(std::move(key), result);
  return result;
}

}  // namespace outbox::providers::phone

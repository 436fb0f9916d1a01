#include "providers/user_data/user_data.hpp"

#include <algorithm>
#include <chrono>

#include "providers/crypto.hpp"
#include "providers/text.hpp"
#include "providers/user_data/iso3166.hpp"
#include "providers/user_data/name_titles.hpp"
#include "providers/user_data/phone_numbers.hpp"
#include "providers/user_data/unicode_text.hpp"

namespace outbox::providers {
namespace {

using unicode::inner_blanks;

bool digits_only(std::string_view s) { return std::all_of(s.begin(), s.end(), is_ascii_digit); }
bool is_dash(char32_t cp) { return cp == '-'; }

int number(std::string_view digits) {
  int v = 0;
  for (const char c : digits) v = v * 10 + (c - '0');
  return v;
}

// `v` (not negative) in decimal, zero-padded to `width` digits.
std::string padded(int v, std::size_t width) {
  std::string digits = std::to_string(v);
  return std::string(digits.size() < width ? width - digits.size() : 0, '0') + digits;
}

normalize_result accepted(std::string value) { return {std::move(value), {}, {}}; }
normalize_result rejected(std::string reason, std::string detail) {
  return {std::nullopt, std::move(reason), std::move(detail)};
}

struct date_parts {
  int year = 0;
  int month = 0;
  int day = 0;
};

// YYYYMMDD, YYYY-MM-DD, MM/DD/YYYY and M/D/YYYY (Meta's examples start from "2/16/1997").
std::optional<date_parts> read_date(std::string_view s) {
  if (s.size() == 8 && digits_only(s)) {
    return date_parts{number(s.substr(0, 4)), number(s.substr(4, 2)), number(s.substr(6))};
  }
  if (s.size() == 10 && s[4] == '-' && s[7] == '-') {
    const auto y = s.substr(0, 4), m = s.substr(5, 2), d = s.substr(8);
    if (digits_only(y) && digits_only(m) && digits_only(d)) return date_parts{number(y), number(m), number(d)};
    return std::nullopt;
  }
  const auto first = s.find('/');
  const auto second = first == std::string_view::npos ? first : s.find('/', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const auto m = s.substr(0, first), d = s.substr(first + 1, second - first - 1), y = s.substr(second + 1);
  const bool shaped = m.size() >= 1 && m.size() <= 2 && d.size() >= 1 && d.size() <= 2 && y.size() == 4;
  if (!shaped || !digits_only(m) || !digits_only(d) || !digits_only(y)) return std::nullopt;
  return date_parts{number(y), number(m), number(d)};
}

normalize_result date_of_birth(std::string_view raw, std::optional<std::chrono::sys_days> today) {
  const std::string_view s = unicode::trim(raw);
  const auto parts = read_date(s);
  constexpr const char* formats = "not in a documented format (YYYYMMDD, YYYY-MM-DD, MM/DD/YYYY)";
  if (!parts) return rejected("invalid_date", formats);
  if (parts->month < 1 || parts->month > 12) {
    // "31/01/1990": a day-first date. Reading it as MM/DD would be a guess.
    if (s.find('/') != std::string_view::npos) return rejected("invalid_date", formats);
    return rejected("invalid_date", "impossible date (no such month)");
  }
  using namespace std::chrono;
  const year_month_day date{year{parts->year}, month{static_cast<unsigned>(parts->month)},
                            day{static_cast<unsigned>(parts->day)}};
  if (!date.ok()) return rejected("invalid_date", "impossible date (no such day in that month)");
  if (parts->year < 1900) return rejected("invalid_date", "a year before 1900");
  if (sys_days{date} > today.value_or(floor<days>(system_clock::now()))) {
    return rejected("invalid_date", "a date in the future");
  }
  return accepted(padded(parts->year, 4) + padded(parts->month, 2) + padded(parts->day, 2));
}

normalize_result email(std::string value) {
  const auto at = value.find('@');
  if (at == std::string::npos) return rejected("invalid_email", "no '@'");
  if (value.find('@', at + 1) != std::string::npos) return rejected("invalid_email", "more than one '@'");
  if (at == 0 || at + 1 == value.size()) return rejected("invalid_email", "nothing before or after the '@'");
  return accepted(std::move(value));
}

normalize_result phone_field(std::string_view raw, phone_style style, const normalize_options& options) {
  auto parsed = phone::to_e164(raw, options.region, options.default_calling_code);
  if (!parsed.e164) return rejected("invalid_phone", std::move(parsed.detail));
  if (style == phone_style::digits) parsed.e164->erase(0, 1);
  return accepted(std::move(*parsed.e164));
}

normalize_result country(std::string_view raw) {
  if (auto code = normalize_country(raw)) return accepted(std::move(*code));
  return rejected("unknown_country", "not an ISO 3166-1 code or name, nor a known alias");
}

// Meta's rule: US states as their 2-letter code; states elsewhere as their name,
// lower-case without punctuation or blanks. A known subdivision written either
// way is mapped (California, CA -> ca; Bayern, BY, DE-BY -> bayern).
normalize_result state(std::string_view raw, const normalize_options& options) {
  if (options.region == "us") {
    if (auto code = iso3166::subdivision_code(options.region, raw)) return accepted(std::move(*code));
  } else if (!options.region.empty()) {
    if (auto name = iso3166::subdivision_name(options.region, raw)) return accepted(normalize_state(*name));
  }
  return accepted(normalize_state(raw));
}

normalize_result gender(std::string_view raw) {
  if (auto g = normalize_gender(raw)) return accepted(std::move(*g));
  return rejected("invalid_gender", "not f, m, female or male");
}

normalize_result by_rule(pii_field field, std::string_view raw, const normalize_options& options) {
  switch (field) {
    case pii_field::email: return email(normalize_email(raw));
    case pii_field::email_google: return email(normalize_email_google(raw));
    case pii_field::phone_digits: return phone_field(raw, phone_style::digits, options);
    case pii_field::phone_e164: return phone_field(raw, phone_style::e164, options);
    case pii_field::name: return accepted(normalize_name(raw));
    case pii_field::given_name_google: return accepted(normalize_given_name_google(raw));
    case pii_field::family_name_google: return accepted(normalize_family_name_google(raw));
    case pii_field::city: return accepted(normalize_city(raw));
    case pii_field::state: return state(raw, options);
    case pii_field::zip: return accepted(normalize_zip(raw));
    case pii_field::postal_code_google: return accepted(normalize_postal_code_google(raw));
    case pii_field::country: return country(raw);
    case pii_field::date_of_birth: return date_of_birth(raw, options.today);
    case pii_field::external_id: return accepted(normalize_external_id(raw));
    case pii_field::gender: return gender(raw);
  }
  return rejected("empty", "unknown field");
}

bool is_base64url(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
  });
}

// A SHA-256 the CRM (or Meta's Parameter Builder, with its ".<appendix>") computed:
// the hex lower-cased, the appendix kept or dropped; nullopt for anything else.
std::optional<std::string> already_hashed(std::string_view trimmed, bool keep_appendix) {
  const std::string_view hex = trimmed.substr(0, 64);
  const std::string_view appendix = trimmed.size() > 65 ? trimmed.substr(65) : std::string_view{};
  const bool plain = trimmed.size() == 64;
  const bool with_appendix =
      trimmed.size() > 65 && trimmed[64] == '.' && appendix.size() <= 64 && is_base64url(appendix);
  if ((!plain && !with_appendix) || !is_sha256_hex(hex)) return std::nullopt;
  std::string hashed{hex};
  for (char& c : hashed) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  if (with_appendix && keep_appendix) hashed.append(".").append(appendix);
  return hashed;
}

}  // namespace

std::string utf8_to_lower(std::string_view text) { return unicode::to_lower(text); }

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return is_ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

std::string normalize_email(std::string_view raw) { return unicode::to_lower(unicode::trim(raw)); }

std::string normalize_email_google(std::string_view raw) {
  // Google's formatting rules remove every blank, not only those at the ends.
  std::string email = unicode::lower_filtered(
      raw, [](char32_t) { return false; }, inner_blanks::drop);
  const std::size_t at = email.rfind('@');
  if (at == std::string::npos) return email;
  const std::string_view domain = std::string_view{email}.substr(at + 1);
  if (domain != "gmail.com" && domain != "googlemail.com") return email;
  std::string local = email.substr(0, at);
  if (const std::size_t plus = local.find('+'); plus != std::string::npos) local.resize(plus);
  std::erase(local, '.');
  return local + "@" + std::string{domain};
}

std::optional<std::string> normalize_phone(std::string_view raw, phone_style style,
                                           std::string_view default_calling_code) {
  normalize_options options;
  options.default_calling_code = std::string{default_calling_code};
  return phone_field(raw, style, options).value;
}

std::string normalize_name(std::string_view raw) {
  return unicode::lower_filtered(raw, unicode::is_punctuation, inner_blanks::one_space);
}

std::string normalize_given_name_google(std::string_view raw) {
  return without_name_prefixes(unicode::lower_filtered(raw, unicode::is_punctuation, inner_blanks::keep));
}

std::string normalize_family_name_google(std::string_view raw) {
  return without_name_suffixes(unicode::lower_filtered(raw, unicode::is_punctuation, inner_blanks::keep));
}

// Google: "trim leading and trailing whitespace", nothing else (case and inner blanks kept).
std::string normalize_postal_code_google(std::string_view raw) { return std::string{unicode::trim(raw)}; }

std::string normalize_city(std::string_view raw) {
  return unicode::lower_filtered(raw, unicode::is_punctuation, inner_blanks::drop);
}

std::string normalize_state(std::string_view raw) {
  return unicode::lower_filtered(raw, unicode::is_punctuation, inner_blanks::drop);
}

std::string normalize_zip(std::string_view raw) {
  const std::string_view s = unicode::trim(raw);
  // US ZIP+4: "12345-6789", "12345 6789" or "123456789" -> "12345".
  const bool us_plus4 =
      (s.size() == 10 && (s[5] == '-' || s[5] == ' ') && digits_only(s.substr(0, 5)) && digits_only(s.substr(6))) ||
      (s.size() == 9 && digits_only(s));
  if (us_plus4) return std::string{s.substr(0, 5)};
  return unicode::lower_filtered(s, is_dash, inner_blanks::drop);
}

std::optional<std::string> normalize_country(std::string_view raw) { return iso3166::country_code(raw); }

std::optional<std::string> normalize_date_of_birth(std::string_view raw, std::optional<std::chrono::sys_days> today) {
  return date_of_birth(raw, today).value;
}

std::optional<std::string> normalize_gender(std::string_view raw) {
  // As Meta's SDK: letters only, then the one-letter form.
  const std::string g = unicode::lower_filtered(raw, unicode::is_punctuation, inner_blanks::drop);
  if (g == "f" || g == "female") return "f";
  if (g == "m" || g == "male") return "m";
  return std::nullopt;
}

// Trimmed and lower-cased, as Meta's Parameter Builder does (getNormalizedExternalID), so a
// CRM id hashes as the same value on the pixel's side and ours; the same for every provider.
std::string normalize_external_id(std::string_view raw) { return unicode::to_lower(unicode::trim(raw)); }

normalize_result normalize_field(pii_field field, std::string_view raw, const normalize_options& options) {
  if (unicode::trim(raw).empty()) return rejected("empty", "blank");
  normalize_result r = by_rule(field, raw, options);
  if (r.value && r.value->empty()) return rejected("empty", "nothing left after normalization");
  return r;
}

normalize_result hash_field(pii_field field, std::string_view raw, const normalize_options& options) {
  const std::string_view trimmed = unicode::trim(raw);
  if (auto hashed = already_hashed(trimmed, options.keep_hash_appendix)) return accepted(std::move(*hashed));
  normalize_result r = normalize_field(field, raw, options);
  if (r.value) r.value = sha256_hex(*r.value);
  return r;
}

std::optional<std::string> normalize_pii(pii_field field, std::string_view raw, const normalize_options& options) {
  return normalize_field(field, raw, options).value;
}

std::optional<std::string> hash_pii(pii_field field, std::string_view raw, const normalize_options& options) {
  return hash_field(field, raw, options).value;
}

}  // namespace outbox::providers

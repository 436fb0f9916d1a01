#pragma once
// Normalization and hashing of user data for ad-platform matching (Meta,
// TikTok, Google). A hash is the lower-case hex SHA-256 of the normalized UTF-8
// string; a value that already is 64 hex characters is taken as hashed by the
// CRM and passed through unchanged (lower-cased). docs/normalization.md has each
// rule, the library behind it (ICU, libphonenumber, iso-codes) and why.
//
//   email         trim, lower-case (ICU, as JavaScript's toLowerCase); exactly one '@'
//                 with text on both sides
//   email_google  same, every blank removed; for gmail.com and googlemail.com only,
//                 dots removed from the local part and '+' with everything after it dropped
//   phone         libphonenumber: the row's country, else the destination's default
//                 calling code, reads national numbers; extension dropped; E.164.
//                 digits style (Meta): "16505551212"; e164 style (TikTok, Google): "+16505551212"
//   name          lower-case, punctuation removed, inner blanks collapsed to one space
//   given_name_google / family_name_google
//                 lower-case, punctuation removed, inner blanks kept as written; a title
//                 before the given name ("Mrs.") and a suffix after the family name ("Jr.") left out
//   city          lower-case, blanks and punctuation removed
//   state         with a known country: the ISO 3166-2 code part ("California" -> "ca",
//                 "Bayern" -> "by"); otherwise as city
//   zip           lower-case, blanks and '-' removed; a US ZIP+4 keeps its 5 digits
//   postal_code_google  trimmed only (Google takes it in clear: "SW1A 1AA")
//   country       ISO 3166-1 alpha-2, lower-case, from a code, a name or an alias ("UK" -> "gb")
//   date_of_birth YYYYMMDD, YYYY-MM-DD, MM/DD/YYYY or M/D/YYYY -> YYYYMMDD; a real date
//                 from 1900 to today
//   gender        "f" or "m" (from f, m, female, male, any case)
//   external_id   trimmed and lower-cased, as Meta's Parameter Builder does (every provider)
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace outbox::providers {

// Unicode full default lower-case mapping, locale independent (JavaScript's
// toLowerCase): "NGUYỄN" -> "nguyễn", "ΣΟΦΙΑΣ" -> "σοφιας", "İ" -> "i̇", "ẞ" -> "ß".
// Invalid UTF-8 bytes become U+FFFD.
[[nodiscard]] std::string utf8_to_lower(std::string_view text);

// 64 hexadecimal characters, either case: a SHA-256 the CRM computed itself.
[[nodiscard]] bool is_sha256_hex(std::string_view text);

// Text rules only; normalize_field also checks the shape (one '@').
[[nodiscard]] std::string normalize_email(std::string_view raw);
[[nodiscard]] std::string normalize_email_google(std::string_view raw);

enum class phone_style {
  digits,  // Meta: country code and number, digits only, no '+'
  e164,    // TikTok, Google: '+' then country code and number
};

// `default_calling_code`: digits ("1", "44"), optionally with a leading '+', or an
// alpha-2 region ("FR"); empty when the destination has none. nullopt for an
// unusable number. normalize_field also takes the row's country into account.
[[nodiscard]] std::optional<std::string> normalize_phone(std::string_view raw, phone_style style,
                                                         std::string_view default_calling_code = {});

[[nodiscard]] std::string normalize_name(std::string_view raw);
[[nodiscard]] std::string normalize_given_name_google(std::string_view raw);
[[nodiscard]] std::string normalize_family_name_google(std::string_view raw);
[[nodiscard]] std::string normalize_postal_code_google(std::string_view raw);
[[nodiscard]] std::string normalize_city(std::string_view raw);
// Without a country: lower-case, blanks and punctuation removed (normalize_field
// maps subdivision names and codes when the row's country is known).
[[nodiscard]] std::string normalize_state(std::string_view raw);
[[nodiscard]] std::string normalize_zip(std::string_view raw);
[[nodiscard]] std::optional<std::string> normalize_country(std::string_view raw);
[[nodiscard]] std::optional<std::string> normalize_date_of_birth(std::string_view raw,
                                                                 std::optional<std::chrono::sys_days> today = {});
[[nodiscard]] std::optional<std::string> normalize_gender(std::string_view raw);
[[nodiscard]] std::string normalize_external_id(std::string_view raw);

enum class pii_field {
  email,
  email_google,
  phone_digits,
  phone_e164,
  name,  // first or last name (Meta, TikTok)
  given_name_google,
  family_name_google,
  city,
  state,
  zip,
  postal_code_google,
  country,
  date_of_birth,
  external_id,
  gender,
};

struct normalize_options {
  std::string default_calling_code;  // the destination's, for national phone numbers; empty: none
  std::string region;                // the row's country, ISO alpha-2 lower case (from normalize_country); may be empty
  // A Meta Parameter Builder hash ("<64 hex>.<appendix>") goes as it came (Meta reads the
  // appendix); when false (TikTok, Google) only its 64 hex characters go.
  bool keep_hash_appendix = false;
  // Dates of birth after this day are refused: the providers pass the day of the
  // engine's clock (user_field_reader), so tests can fix it. nullopt: the system
  // date (the command-line tools).
  std::optional<std::chrono::sys_days> today;
};

// Why a value was left out: `reason` is a short metric label, `detail` one line
// for logs, never the value (it is personal data).
struct normalize_result {
  std::optional<std::string> value;  // normalized (or hashed, for hash_field); nullopt: unusable
  std::string reason;                // when unusable: "empty", "invalid_email", "invalid_phone", "invalid_date",
                                     // "unknown_country", "invalid_gender"
  std::string detail;                // "not a possible phone number for region FR (too short)"
  [[nodiscard]] bool ok() const { return value.has_value(); }
};

// The normalized value, or why there is none.
[[nodiscard]] normalize_result normalize_field(pii_field field, std::string_view raw,
                                               const normalize_options& options = {});

// sha256_hex of normalize_field's value; a raw value that already is a SHA-256
// (64 hex characters after trimming) is returned lower-cased instead, never hashed again,
// and so is one from Meta's Parameter Builder, "<64 hex>.<appendix>" (the appendix is
// base64url: format, language and SDK version), with or without its appendix as
// `options.keep_hash_appendix` says.
[[nodiscard]] normalize_result hash_field(pii_field field, std::string_view raw, const normalize_options& options = {});

// normalize_field / hash_field, value only.
[[nodiscard]] std::optional<std::string> normalize_pii(pii_field field, std::string_view raw,
                                                       const normalize_options& options = {});
[[nodiscard]] std::optional<std::string> hash_pii(pii_field field, std::string_view raw,
                                                  const normalize_options& options = {});

}  // namespace outbox::providers

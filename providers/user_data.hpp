#pragma once
// Normalization and hashing of user data for ad-platform matching (Meta,
// TikTok, Google). Every function is pure. A hash is the lower-case hex SHA-256
// of the normalized UTF-8 string; a value that already is 64 hex characters is
// taken as hashed by the CRM and passed through unchanged (lower-cased).
//
// Rules (see docs/providers.md for the reasoning and the providers' sources):
//   email         trim, lower-case
//   email_google  same; for gmail.com and googlemail.com only, dots removed from
//                 the local part and '+' with everything after it dropped
//   phone         spaces, tabs, '-', '.', '(', ')', '/' removed; "00" prefix -> '+';
//                 an international number's "(0)" (written trunk zero) dropped;
//                 without '+' the destination's default calling code is added
//                 (national trunk zeros dropped) unless the digits already start
//                 with it and are long enough to include it; without a default
//                 code the digits are taken as already international.
//                 digits style (Meta): "16505551212"; e164 style (TikTok, Google): "+16505551212"
//   name          lower-case (UTF-8 aware), punctuation removed, inner blanks collapsed
//   city, state   lower-case, spaces and punctuation removed
//   zip           lower-case, spaces and '-' removed; a US ZIP+4 keeps its 5 digits
//   country       ISO 3166-1 alpha-2, lower-case ("us")
//   date_of_birth YYYY-MM-DD (or YYYYMMDD) -> YYYYMMDD
//   external_id   trimmed only: ids are opaque and may be case-sensitive
// A value that is unusable after normalization (empty, a phone with letters, a
// three-letter country) gives nullopt and is left out of the request.
#include <optional>
#include <string>
#include <string_view>

namespace outbox::providers {

// Lower-cases UTF-8 text: ASCII, Latin-1 Supplement (É -> é), Latin Extended-A,
// Greek and Cyrillic capitals. Other code points and invalid bytes are copied.
[[nodiscard]] std::string utf8_to_lower(std::string_view text);

// 64 hexadecimal characters, either case: a SHA-256 the CRM computed itself.
[[nodiscard]] bool is_sha256_hex(std::string_view text);

[[nodiscard]] std::string normalize_email(std::string_view raw);
[[nodiscard]] std::string normalize_email_google(std::string_view raw);

enum class phone_style {
  digits,  // Meta: country code and number, digits only, no '+', no leading zeros
  e164,    // TikTok, Google: '+' then country code and number
};

// `default_calling_code`: digits ("1", "44"), optionally with a leading '+'; empty
// when the destination has none. nullopt for an unusable number (letters left
// after stripping separators, fewer than 7 or more than 15 digits).
[[nodiscard]] std::optional<std::string> normalize_phone(std::string_view raw, phone_style style,
                                                         std::string_view default_calling_code = {});

[[nodiscard]] std::string normalize_name(std::string_view raw);
[[nodiscard]] std::string normalize_city(std::string_view raw);
[[nodiscard]] std::string normalize_state(std::string_view raw);
[[nodiscard]] std::string normalize_zip(std::string_view raw);
[[nodiscard]] std::optional<std::string> normalize_country(std::string_view raw);
[[nodiscard]] std::optional<std::string> normalize_date_of_birth(std::string_view raw);
[[nodiscard]] std::string normalize_external_id(std::string_view raw);

enum class pii_field {
  email,
  email_google,
  phone_digits,
  phone_e164,
  name,  // first or last name
  city,
  state,
  zip,
  country,
  date_of_birth,
  external_id,
};

struct normalize_options {
  std::string default_calling_code;  // for phone numbers without one; empty: none
};

// The normalized value, or nullopt when nothing usable remains.
[[nodiscard]] std::optional<std::string> normalize_pii(pii_field field, std::string_view raw,
                                                       const normalize_options& options = {});

// sha256_hex(normalize_pii(...)); a raw value that already is a SHA-256 (64 hex
// characters after trimming) is returned lower-cased instead. nullopt when unusable.
[[nodiscard]] std::optional<std::string> hash_pii(pii_field field, std::string_view raw,
                                                  const normalize_options& options = {});

}  // namespace outbox::providers

#include "providers/user_data.hpp"

#include <algorithm>
#include <chrono>

#include "providers/crypto.hpp"

namespace outbox::providers {
namespace {

struct decoded {
  char32_t cp = 0;
  std::size_t length = 1;
  bool valid = false;
};

// One UTF-8 sequence at the start of `s` (non-empty). Invalid bytes come back
// one at a time with valid = false so callers can copy them unchanged.
decoded decode(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return {b0, 1, true};
  std::size_t len = 0;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return {b0, 1, false};
  }
  if (s.size() < len) return {b0, 1, false};
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) != 0x80) return {b0, 1, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {b0, 1, false};
  return {cp, len, true};
}

void encode(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

char32_t lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 0x20;
  if (c < 0xC0) return c;
  // Latin-1 Supplement: À..Þ except × (U+00D7).
  if (c <= 0xDE) return c == 0xD7 ? c : c + 0x20;
  if (c < 0x100) return c;
  // Latin Extended-A.
  if (c == 0x130) return 'i';  // İ (simple case mapping)
  if (c == 0x178) return 0xFF;  // Ÿ
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c % 2 == 0) ? c + 1 : c;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
  // Greek.
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 0x3F;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  // Cyrillic.
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  return c;
}

bool is_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200B) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  return c == 0xA1 || c == 0xA7 || c == 0xAB || c == 0xB6 || c == 0xB7 || c == 0xBB || c == 0xBF ||
         (c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E) || (c >= 0x3001 && c <= 0x3003);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Calls f(cp, bytes) per code point; invalid bytes come as cp = U+FFFD with their raw byte.
template <class F>
void for_each_code_point(std::string_view s, F&& f) {
  while (!s.empty()) {
    const decoded d = decode(s);
    f(d.valid ? d.cp : char32_t{0xFFFD}, s.substr(0, d.length));
    s.remove_prefix(d.length);
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty()) {
    const decoded d = decode(s);
    if (!d.valid || !is_space(d.cp)) break;
    s.remove_prefix(d.length);
  }
  // Trailing blanks: ASCII and the multi-byte ones listed in is_space.
  while (!s.empty()) {
    std::size_t start = s.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && s.size() - start < 4) --start;
    const decoded d = decode(s.substr(start));
    if (!d.valid || start + d.length != s.size() || !is_space(d.cp)) break;
    s.remove_suffix(d.length);
  }
  return s;
}

// Lower-cases and keeps only what `keep` accepts; `space_as` replaces a run of
// blanks (0 drops blanks). Leading and trailing blanks are dropped.
template <class Keep>
std::string fold(std::string_view raw, Keep keep, char space_as) {
  std::string out;
  out.reserve(raw.size());
  bool pending_space = false;
  for_each_code_point(trim(raw), [&](char32_t cp, std::string_view bytes) {
    if (is_space(cp)) {
      pending_space = true;
      return;
    }
    if (cp != 0xFFFD && !keep(cp)) return;
    if (pending_space && space_as != 0 && !out.empty()) out.push_back(space_as);
    pending_space = false;
    if (cp == 0xFFFD) {
      out.append(bytes);  // invalid byte (or a real U+FFFD): copied as is
    } else {
      encode(lower(cp), out);
    }
  });
  return out;
}

std::optional<int> two_or_four_digits(std::string_view s) {
  int v = 0;
  for (const char c : s) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string calling_code_digits(std::string_view code) {
  code = trim(code);
  if (!code.empty() && code.front() == '+') code.remove_prefix(1);
  if (code.empty() || code.size() > 3 || code.front() == '0' || !std::all_of(code.begin(), code.end(), is_digit)) {
    return {};
  }
  return std::string{code};
}

}  // namespace

std::string utf8_to_lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text, [&](char32_t cp, std::string_view bytes) {
    if (cp == 0xFFFD) {
      out.append(bytes);
    } else {
      encode(lower(cp), out);
    }
  });
  return out;
}

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

std::string normalize_email(std::string_view raw) { return utf8_to_lower(trim(raw)); }

std::string normalize_email_google(std::string_view raw) {
  std::string email = normalize_email(raw);
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
  std::string text{trim(raw)};
  // "+44 (0)20 ..." writes the national trunk zero in parentheses: not part of the number.
  if (text.starts_with('+') || text.starts_with("00")) {
    for (std::size_t at = text.find("(0)"); at != std::string::npos; at = text.find("(0)")) text.erase(at, 3);
  }
  std::string number;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '-' || c == '.' || c == '(' || c == ')' || c == '/') continue;
    number.push_back(c);
  }
  bool international = false;
  if (number.starts_with('+')) {
    international = true;
    number.erase(0, 1);
  } else if (number.starts_with("00")) {
    international = true;
    number.erase(0, 2);
  }
  if (number.empty() || !std::all_of(number.begin(), number.end(), is_digit)) return std::nullopt;
  if (!international) {
    const std::string code = calling_code_digits(default_calling_code);
    // "16505551212" with default code 1 already carries it: a national number
    // starts with a trunk 0 or is too short to include the code in front.
    const bool has_code =
        !code.empty() && number.front() != '0' && number.starts_with(code) && number.size() >= code.size() + 9;
    if (!code.empty() && !has_code) {
      number.erase(0, number.find_first_not_of('0'));  // national trunk prefix
      if (number.empty()) return std::nullopt;
      number = code + number;
    }
  }
  const std::size_t first = number.find_first_not_of('0');
  if (first == std::string::npos) return std::nullopt;
  number.erase(0, first);
  if (number.size() < 7 || number.size() > 15) return std::nullopt;
  return style == phone_style::e164 ? "+" + number : number;
}

std::string normalize_name(std::string_view raw) {
  return fold(raw, [](char32_t cp) { return !is_punctuation(cp); }, ' ');
}

std::string normalize_city(std::string_view raw) {
  return fold(raw, [](char32_t cp) { return !is_punctuation(cp); }, 0);
}

std::string normalize_state(std::string_view raw) {
  return fold(raw, [](char32_t cp) { return !is_punctuation(cp); }, 0);
}

std::string normalize_zip(std::string_view raw) {
  const std::string_view s = trim(raw);
  // US ZIP+4: "12345-6789", "12345 6789" or "123456789" -> "12345".
  const bool us_plus4 =
      (s.size() == 10 && (s[5] == '-' || s[5] == ' ') && std::all_of(s.begin(), s.begin() + 5, is_digit) &&
       std::all_of(s.begin() + 6, s.end(), is_digit)) ||
      (s.size() == 9 && std::all_of(s.begin(), s.end(), is_digit));
  if (us_plus4) return std::string{s.substr(0, 5)};
  return fold(s, [](char32_t cp) { return cp != '-'; }, 0);
}

std::optional<std::string> normalize_country(std::string_view raw) {
  const std::string code = fold(raw, [](char32_t cp) { return !is_punctuation(cp); }, 0);
  if (code.size() != 2 || !std::all_of(code.begin(), code.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
    return std::nullopt;
  }
  return code;
}

std::optional<std::string> normalize_date_of_birth(std::string_view raw) {
  const std::string_view s = trim(raw);
  std::string compact;
  if (s.size() == 10 && s[4] == '-' && s[7] == '-') {
    compact = std::string{s.substr(0, 4)} + std::string{s.substr(5, 2)} + std::string{s.substr(8, 2)};
  } else if (s.size() == 8) {
    compact = std::string{s};
  } else {
    return std::nullopt;
  }
  const auto y = two_or_four_digits(std::string_view{compact}.substr(0, 4));
  const auto m = two_or_four_digits(std::string_view{compact}.substr(4, 2));
  const auto d = two_or_four_digits(std::string_view{compact}.substr(6, 2));
  if (!y || !m || !d || *m < 1 || *m > 12 || *d < 1 || *d > 31) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year{*y}, std::chrono::month{static_cast<unsigned>(*m)},
                                         std::chrono::day{static_cast<unsigned>(*d)}};
  if (!date.ok()) return std::nullopt;
  return compact;
}

std::string normalize_external_id(std::string_view raw) { return std::string{trim(raw)}; }

std::optional<std::string> normalize_pii(pii_field field, std::string_view raw, const normalize_options& options) {
  std::optional<std::string> out;
  switch (field) {
    case pii_field::email:
      out = normalize_email(raw);
      break;
    case pii_field::email_google:
      out = normalize_email_google(raw);
      break;
    case pii_field::phone_digits:
      out = normalize_phone(raw, phone_style::digits, options.default_calling_code);
      break;
    case pii_field::phone_e164:
      out = normalize_phone(raw, phone_style::e164, options.default_calling_code);
      break;
    case pii_field::name:
      out = normalize_name(raw);
      break;
    case pii_field::city:
      out = normalize_city(raw);
      break;
    case pii_field::state:
      out = normalize_state(raw);
      break;
    case pii_field::zip:
      out = normalize_zip(raw);
      break;
    case pii_field::country:
      out = normalize_country(raw);
      break;
    case pii_field::date_of_birth:
      out = normalize_date_of_birth(raw);
      break;
    case pii_field::external_id:
      out = normalize_external_id(raw);
      break;
  }
  if (out && out->empty()) out.reset();
  return out;
}

std::optional<std::string> hash_pii(pii_field field, std::string_view raw, const normalize_options& options) {
  const std::string_view trimmed = trim(raw);
  if (is_sha256_hex(trimmed)) {
    std::string hashed{trimmed};
    for (char& c : hashed) {
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    }
    return hashed;
  }
  const auto normalized = normalize_pii(field, raw, options);
  if (!normalized) return std::nullopt;
  return sha256_hex(*normalized);
}

}  // namespace outbox::providers

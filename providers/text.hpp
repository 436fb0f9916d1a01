#pragma once
// ASCII text helpers the providers and the configuration share. What they read
// (header names, URL schemes, setting words, dates, ids, numbers) is ASCII, so
// these never consult the locale as <cctype> would. Unicode text (user data)
// has its own rules in providers/user_data/unicode_text.hpp.
#include <optional>
#include <string>
#include <string_view>

namespace outbox::providers {

[[nodiscard]] constexpr bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
[[nodiscard]] constexpr char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
[[nodiscard]] std::string ascii_lowercase(std::string_view s);
[[nodiscard]] bool iequals(std::string_view a, std::string_view b);

// Without leading and trailing spaces and tabs (header values, settings).
[[nodiscard]] std::string_view trim_blanks(std::string_view s);
// Without leading and trailing ASCII white space (" \t\n\r\f\v"; values in a payload).
[[nodiscard]] std::string_view trim_ascii_space(std::string_view s);

// true/1/yes/on and false/0/no/off in any case; nullopt for anything else.
[[nodiscard]] std::optional<bool> parse_bool(std::string_view text);

}  // namespace outbox::providers

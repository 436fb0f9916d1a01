#include "providers/text.hpp"

#include <algorithm>

namespace outbox::providers {

std::string ascii_lowercase(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view trim_ascii_space(std::string_view s) {
  constexpr std::string_view space = " \t\n\r\f\v";
  const auto first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

std::optional<bool> parse_bool(std::string_view text) {
  for (const std::string_view t : {"true", "1", "yes", "on"}) {
    if (iequals(text, t)) return true;
  }
  for (const std::string_view f : {"false", "0", "no", "off"}) {
    if (iequals(text, f)) return false;
  }
  return std::nullopt;
}

}  // namespace outbox::providers

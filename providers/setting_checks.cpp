#include "providers/setting_checks.hpp"
#include "providers/quoted_text.hpp"
#include "providers/text.hpp"

#include <algorithm>
#include <charconv>

namespace outbox::providers::setting_checks {
namespace {}  // namespace

std::string_view setting(const settings_map& settings, std::string_view key) {
  const auto it = settings.find(std::string{key});
  return it == settings.end() ? std::string_view{} : std::string_view{it->second};
}

bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_ascii_digit); }

bool has_blank_or_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b <= 0x20 || b == 0x7f;
  });
}

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b < 0x20 || b == 0x7f;
  });
}

std::string got(std::string_view value) { return " (got \"" + quoted_excerpt(value) + "\")"; }

std::optional<std::size_t> parse_size(std::string_view s, std::size_t min, std::size_t max) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < min || v > max) return std::nullopt;
  return v;
}

std::string base_url_problem(std::string_view url) {
  const bool https = url.starts_with("https://");
  const bool http = url.starts_with("http://");
  if (!https && !http) return "must start with https:// (or http:// for a local test server)";
  const std::string_view rest = url.substr(https ? 8 : 7);
  if (rest.empty() || rest.front() == '/') return "has no host name";
  if (has_blank_or_control(url)) return "contains spaces or control characters";
  if (url.find_first_of("?#") != std::string_view::npos) return "must not contain a query or fragment";
  return {};
}

std::string strip_trailing_slashes(std::string_view url) {
  while (url.ends_with('/')) url.remove_suffix(1);
  return std::string{url};
}

std::string calling_code_problem(std::string_view code) {
  if (code.starts_with('+')) code.remove_prefix(1);
  if (code.empty() || code.size() > 3 || code.front() == '0' || !all_digits(code)) {
    return "must be a country calling code of 1 to 3 digits, such as 1 or 44";
  }
  return {};
}

std::string calling_code(std::string_view code) {
  if (code.starts_with('+')) code.remove_prefix(1);
  return std::string{code};
}

}  // namespace outbox::providers::setting_checks

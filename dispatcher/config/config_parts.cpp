#include "dispatcher/config/config_parts.hpp"

#include <charconv>

#include "dispatcher/ops/log.hpp"

namespace outbox::config_detail {

std::string upper(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = s.find(sep);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + sep.size());
  }
}

std::string join(std::span<const std::string_view> items, std::string_view sep) {
  std::string out;
  for (const auto item : items) {
    if (!out.empty()) out.append(sep);
    out.append(item);
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string dest_var(std::string_view provider, std::string_view name, std::string_view key) {
  return std::string{dest_prefix} + upper(provider) + "__" + upper(name) + "__" + upper(key);
}

std::string header_var(std::string_view provider, std::string_view name, std::string_view header) {
  std::string key = "HEADER__" + upper(header);
  std::replace(key.begin(), key.end(), '-', '_');
  return dest_var(provider, name, key);
}

bool is_secret_setting(std::string_view name) { return name == "DATABASE_URL" || is_secret_key(name); }

std::string got(std::string_view value, bool secret) {
  if (secret) return {};
  std::string shown;
  for (const char c : value.substr(0, 60)) shown.push_back(static_cast<unsigned char>(c) < 0x20 ? '?' : c);
  if (value.size() > 60) shown += "...";
  return " (got \"" + shown + "\")";
}

std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max,
                                          const std::string& origin, bool secret, std::vector<std::string>& problems) {
  std::int64_t parsed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (ec != std::errc{} || end != text.data() + text.size() || parsed < min || parsed > max) {
    problems.push_back(origin + ": must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                       got(text, secret));
    return std::nullopt;
  }
  return parsed;
}

}  // namespace outbox::config_detail

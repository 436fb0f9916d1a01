#include "dispatcher/duration_arg.hpp"

#include <charconv>

namespace outbox {

std::optional<std::chrono::seconds> parse_duration_arg(std::string_view text) {
  if (text.empty()) return std::nullopt;
  long long unit = 1;
  switch (text.back()) {
    case 's':
      text.remove_suffix(1);
      break;
    case 'm':
      unit = 60;
      text.remove_suffix(1);
      break;
    case 'h':
      unit = 3600;
      text.remove_suffix(1);
      break;
    case 'd':
      unit = 86400;
      text.remove_suffix(1);
      break;
    default:
      break;
  }
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() || value < 0) return std::nullopt;
  if (value > 100LL * 365 * 86400 / unit) return std::nullopt;
  return std::chrono::seconds(value * unit);
}

}  // namespace outbox

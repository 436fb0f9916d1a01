#include "dispatcher/duration_arg.hpp"

#include <charconv>
#include <system_error>

namespace outbox {
namespace {

// Seconds per unit for the suffix, or 0 when the last character is not a unit.
long long unit_seconds(char suffix) {
  switch (suffix) {
    case 's':
      return 1;
    case 'm':
      return 60;
    case 'h':
      return 3600;
    case 'd':
      return 86400;
    case 'y':
      return 365LL * 86400;
    default:
      return 0;
  }
}

}  // namespace

duration_arg read_duration_arg(std::string_view text) {
  const std::string shown{text.substr(0, 40)};
  duration_arg out;
  out.problem = "not a duration: '" + shown + "' (a whole number with an optional unit s, m, h, d or y: 90s, 15m, 30d)";
  if (text.empty()) return out;
  long long unit = unit_seconds(text.back());
  if (unit == 0) {
    unit = 1;  // bare seconds
  } else {
    text.remove_suffix(1);
  }
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool whole_number = !text.empty() && ptr == text.data() + text.size() && text.front() != '-' &&
                            text.front() != '+';
  if (!whole_number || (ec != std::errc{} && ec != std::errc::result_out_of_range)) return out;
  // Compare before multiplying: value * unit could overflow.
  if (ec == std::errc::result_out_of_range || value > max_duration_arg.count() / unit) {
    out.problem = "'" + shown + "' is longer than the maximum of 10 years (3650d)";
    return out;
  }
  out.value = std::chrono::seconds{value * unit};
  out.problem.clear();
  return out;
}

std::optional<std::chrono::seconds> parse_duration_arg(std::string_view text) { return read_duration_arg(text).value; }

}  // namespace outbox

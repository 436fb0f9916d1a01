#include "dispatcher/cli/duration_arg.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "providers/text.hpp"

namespace outbox {
namespace {

// Seconds per unit for the suffix, or 0 when the last character is not a unit.
long long unit_seconds(char suffix) {
  switch (suffix) {
    case 's': return 1;
    case 'm': return 60;
    case 'h': return 3600;
    case 'd': return 86400;
    case 'y': return 365LL * 86400;
    default: return 0;
  }
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), providers::is_ascii_digit);
}

}  // namespace

duration_arg read_duration_arg(std::string_view text, zero_duration zero) {
  const std::string shown{text.substr(0, 40)};
  duration_arg out;
  if (all_digits(text)) {
    // The unit is never guessed: "30" was 30 seconds once, and meant 30 days.
    out.problem = "'" + shown + "' needs a unit: " + shown + "s, " + shown + "m, " + shown + "h, " + shown + "d";
    return out;
  }
  out.problem = "not a duration: '" + shown + "' (a whole number and a unit s, m, h, d or y: 90s, 15m, 30d)";
  const long long unit = text.empty() ? 0 : unit_seconds(text.back());
  if (unit == 0) return out;
  text.remove_suffix(1);
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!all_digits(text) || ptr != text.data() + text.size()) return out;
  // Compare before multiplying: value * unit could overflow.
  if (ec == std::errc::result_out_of_range || value > max_duration_arg.count() / unit) {
    out.problem = "'" + shown + "' is longer than the maximum of 10 years (3650d)";
    return out;
  }
  if (value == 0 && zero == zero_duration::refused) {
    out.problem = "'" + shown + "' is zero: give a duration longer than 0 (e.g. 30d)";
    return out;
  }
  out.value = std::chrono::seconds{value * unit};
  out.problem.clear();
  return out;
}

std::optional<std::chrono::seconds> parse_duration_arg(std::string_view text) { return read_duration_arg(text).value; }

bool looks_like_duration(std::string_view text) {
  if (!text.empty() && !providers::is_ascii_digit(text.back())) text.remove_suffix(1);
  return all_digits(text);
}

}  // namespace outbox

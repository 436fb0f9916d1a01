#include "dispatcher/ops/display_time.hpp"

#include <charconv>
#include <chrono>
#include <optional>

#include "providers/canonical_event.hpp"

namespace outbox {
namespace {

std::optional<int> digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return std::nullopt;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data() + at, s.data() + at + n, v);
  if (ec != std::errc{} || end != s.data() + at + n) return std::nullopt;
  return v;
}

// "+01", "+05:30", "-03:00:00" from `at` to the end: seconds east of UTC.
std::optional<int> offset_seconds(std::string_view s, std::size_t at) {
  if (at == s.size() - 1 && s[at] == 'Z') return 0;
  if (at >= s.size() || (s[at] != '+' && s[at] != '-')) return std::nullopt;
  const int sign = s[at] == '-' ? -1 : 1;
  int total = 0, unit = 3600;
  std::size_t i = at + 1;
  for (int part = 0; part < 3 && i < s.size(); ++part, unit /= 60) {
    if (part > 0 && s[i++] != ':') return std::nullopt;
    const auto v = digits(s, i, 2);
    if (!v) return std::nullopt;
    total += *v * unit;
    i += 2;
  }
  if (i != s.size()) return std::nullopt;
  return sign * total;
}

}  // namespace

std::string display_time(std::string_view t) {
  // YYYY-MM-DD[ T]HH:MM:SS[.fraction](Z|+HH[:MM[:SS]])
  const auto y = digits(t, 0, 4), mo = digits(t, 5, 2), d = digits(t, 8, 2);
  const auto h = digits(t, 11, 2), mi = digits(t, 14, 2), s = digits(t, 17, 2);
  if (!y || !mo || !d || !h || !mi || !s || t[4] != '-' || t[7] != '-' || (t[10] != ' ' && t[10] != 'T') ||
      t[13] != ':' || t[16] != ':')
    return std::string(t);
  std::size_t at = 19;
  if (at < t.size() && t[at] == '.') {
    ++at;
    while (at < t.size() && t[at] >= '0' && t[at] <= '9') ++at;
  }
  const auto offset = offset_seconds(t, at);
  if (!offset) return std::string(t);
  using namespace std::chrono;
  const year_month_day date{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
  if (!date.ok()) return std::string(t);
  const auto local = sys_days{date}.time_since_epoch() + hours{*h} + minutes{*mi} + seconds{*s};
  return providers::format_rfc3339_utc(duration_cast<seconds>(local).count() - *offset);
}

}  // namespace outbox

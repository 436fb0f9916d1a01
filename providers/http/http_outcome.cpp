#include "providers/http/http_outcome.hpp"
#include "providers/text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace outbox::providers {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

// Reads exactly s.size() digits; nullopt if any is not a digit.
std::optional<int> fixed_digits(std::string_view s) {
  int v = 0;
  for (const char c : s) {
    if (!is_ascii_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// IMF-fixdate only: "Sun, 06 Nov 1994 08:49:37 GMT" (names are case-sensitive).
// In whole seconds: system_clock's nanoseconds end in 2262, and years up to 9999 are valid here.
std::optional<std::chrono::sys_seconds> parse_imf_fixdate(std::string_view s) {
  static constexpr std::array<std::string_view, 7> day_names{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 12> month_names{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' || s[19] != ':' ||
      s[22] != ':' || s.substr(25) != " GMT") {
    return std::nullopt;
  }
  if (std::find(day_names.begin(), day_names.end(), s.substr(0, 3)) == day_names.end()) return std::nullopt;
  const auto month_it = std::find(month_names.begin(), month_names.end(), s.substr(8, 3));
  if (month_it == month_names.end()) return std::nullopt;
  const auto day = fixed_digits(s.substr(5, 2));
  const auto year = fixed_digits(s.substr(12, 4));
  const auto hour = fixed_digits(s.substr(17, 2));
  const auto minute = fixed_digits(s.substr(20, 2));
  const auto second = fixed_digits(s.substr(23, 2));
  if (!day || !year || !hour || !minute || !second || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year{*year},
                                         std::chrono::month{static_cast<unsigned>(month_it - month_names.begin() + 1)},
                                         std::chrono::day{static_cast<unsigned>(*day)}};
  if (!date.ok()) return std::nullopt;
  return std::chrono::sys_days{date} + std::chrono::hours{*hour} + std::chrono::minutes{*minute} + seconds{*second};
}

// One UTF-8 sequence at the start of `s`: its length, or 0 when the bytes are not
// well-formed UTF-8 (overlong forms, surrogates and > U+10FFFF are rejected).
std::size_t utf8_sequence_length(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  const auto b1 = static_cast<unsigned char>(s[1]);
  if (b1 < lo || b1 > hi) return 0;
  for (std::size_t i = 2; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return len;
}

// Appends the sanitized form of `body` to `out` while it fits in `limit` bytes.
// Returns true when the whole body fitted.
bool append_sanitized(std::string& out, std::string_view body, std::size_t limit, bool keep_layout) {
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
  std::size_t i = 0;
  while (i < body.size()) {
    const std::size_t len = utf8_sequence_length(body.substr(i));
    std::string_view piece;
    if (len == 0) {
      piece = replacement;
    } else if (len == 1) {
      const char c = body[i];
      const bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      piece = !control || (keep_layout && (c == '\n' || c == '\t')) ? body.substr(i, 1) : std::string_view{" "};
    } else if (len == 2 && static_cast<unsigned char>(body[i]) == 0xC2 &&
               static_cast<unsigned char>(body[i + 1]) <= 0x9F) {
      piece = " ";  // C1 control characters U+0080..U+009F
    } else {
      piece = body.substr(i, len);
    }
    if (out.size() + piece.size() > limit) return false;
    out.append(piece);
    i += len == 0 ? 1 : len;
  }
  return true;
}

std::string excerpt(std::string_view body, std::size_t max, bool keep_layout) {
  static constexpr std::string_view ellipsis = "...";
  std::string out;
  out.reserve(std::min(max, body.size() + 8));
  if (append_sanitized(out, body, max, keep_layout)) return out;
  out.clear();
  if (max < ellipsis.size()) {
    (void)append_sanitized(out, body, max, keep_layout);
    return out;
  }
  (void)append_sanitized(out, body, max - ellipsis.size(), keep_layout);
  out.append(ellipsis);
  return out;
}

std::string status_text(const http_response& response) {
  std::string text = "HTTP " + std::to_string(response.status);
  if (!response.body.empty()) text += ": " + one_line_excerpt(response.body, 200);
  return text;
}

std::string transport_text(const http_result& result) {
  std::string text =
      result.error == transport_error::none ? std::string{"no response"} : std::string{to_string(result.error)};
  if (!result.error_message.empty()) text += ": " + one_line_excerpt(result.error_message, 300);
  // Tells on-call that a retry may reach the receiver twice (it must dedup on the key).
  if (result.maybe_delivered) text += " (the request may have reached the server)";
  return text;
}

}  // namespace

std::optional<seconds> parse_retry_after(std::string_view value, system_clock::time_point now) {
  value = trim_blanks(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), is_ascii_digit)) {
    // Saturate instead of overflowing on absurd values like 99999999999999999999.
    std::int64_t total = 0;
    for (const char c : value) total = std::min<std::int64_t>(total * 10 + (c - '0'), max_retry_after.count());
    return seconds{total};
  }
  const auto when = parse_imf_fixdate(value);
  if (!when) return std::nullopt;
  // floor(when - now) without converting `when` to nanoseconds, which overflows after 2262.
  const seconds delta = *when - std::chrono::ceil<seconds>(now);
  return std::clamp(delta, seconds{0}, max_retry_after);
}

bool is_retryable_status(int status) {
  return status == 408 || status == 425 || status == 429 || (status >= 500 && status <= 599);
}

bool is_destination_wide_failure(int status) { return status == 401 || status == 403; }

std::string response_excerpt(std::string_view body, std::size_t max) { return excerpt(body, max, true); }

std::string one_line_excerpt(std::string_view body, std::size_t max) { return excerpt(body, max, false); }

event_outcome classify_http_result(const http_result& result, system_clock::time_point now) {
  event_outcome outcome;
  if (!result.response) {
    outcome.kind = result.error == transport_error::bad_url ? outcome_kind::dead : outcome_kind::retry;
    outcome.error = transport_text(result);
    return outcome;
  }
  const http_response& response = *result.response;
  if (response.status >= 200 && response.status <= 299) {
    outcome.kind = outcome_kind::delivered;
    return outcome;
  }
  outcome.error = status_text(response);
  if (is_retryable_status(response.status)) {
    outcome.kind = outcome_kind::retry;
    if (const auto header = response.header("retry-after")) outcome.retry_after = parse_retry_after(*header, now);
  } else {
    outcome.kind = outcome_kind::dead;
  }
  return outcome;
}

batch_outcome uniform_outcome(std::size_t n, const http_result& result, system_clock::time_point now) {
  event_outcome outcome = classify_http_result(result, now);
  batch_outcome batch;
  if (result.response && is_destination_wide_failure(result.response->status)) {
    outcome.kind = outcome_kind::retry;
    std::string reason = "HTTP " + std::to_string(result.response->status) + " from destination";
    if (!result.response->body.empty()) reason += ": " + one_line_excerpt(result.response->body, 200);
    batch.pause_destination = std::move(reason);
  }
  batch.events.assign(n, outcome);
  return batch;
}

}  // namespace outbox::providers

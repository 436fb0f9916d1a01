#pragma once
// Durations on the command line (`prune --older-than`, `sweep --older-than`):
// "90" (seconds), "90s", "15m", "2h", "1d", "1y" (365 days).
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace outbox {

// The longest duration accepted: 10 years. Longer is refused rather than
// clamped (a typo such as 3000d for 300d should not silently mean "everything").
// It also keeps every duration within the SQL statements' integer parameters
// (int4 seconds, about 68 years) with room to spare.
inline constexpr std::chrono::seconds max_duration_arg{10LL * 365 * 86400};

struct duration_arg {
  std::optional<std::chrono::seconds> value;  // nullopt when refused
  std::string problem;  // why it was refused, for "dispatcher prune: --older-than: <problem>"
};

// Parses `text`; never overflows (the unit multiplication is checked first).
[[nodiscard]] duration_arg read_duration_arg(std::string_view text);

// read_duration_arg(text).value.
[[nodiscard]] std::optional<std::chrono::seconds> parse_duration_arg(std::string_view text);

}  // namespace outbox

#pragma once
// Durations on the command line (`prune --older-than`, `sweep --older-than`,
// `requeue --since`): a whole number and a unit, "90s", "15m", "2h", "1d", "1y"
// (365 days). The unit is required: a bare "30" is refused rather than read as
// 30 seconds when 30 days was meant.
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

// Whether 0 means something for this option (`sweep --older-than 0s`: every
// expired lease) or nothing useful (`prune --older-than 0s`: everything).
enum class zero_duration { allowed, refused };

struct duration_arg {
  std::optional<std::chrono::seconds> value;  // nullopt when refused
  std::string problem;                        // why it was refused, for "dispatcher prune: --older-than: <problem>"
};

// Parses `text`; never overflows (the unit multiplication is checked first).
[[nodiscard]] duration_arg read_duration_arg(std::string_view text, zero_duration zero = zero_duration::allowed);

// read_duration_arg(text).value.
[[nodiscard]] std::optional<std::chrono::seconds> parse_duration_arg(std::string_view text);

// True for text meant as a duration, valid or not: digits, then at most one
// letter ("30", "30d", "5x"). `requeue --since` reads anything else as a time.
[[nodiscard]] bool looks_like_duration(std::string_view text);

}  // namespace outbox

#pragma once
// Durations on the command line: "90" (seconds), "90s", "15m", "2h", "1d".
#include <chrono>
#include <optional>
#include <string_view>

namespace outbox {

[[nodiscard]] std::optional<std::chrono::seconds> parse_duration_arg(std::string_view text);

}  // namespace outbox

#pragma once
// The platforms' API versions and the dates they stop answering, in one place.
// A destination pinned to a version (Meta's `api_version`) gets a warning in the
// log, a metric (outbox_api_version_sunset_seconds) and a line in `dispatcher
// status` from sunset_warning_window before its sunset. docs/providers.md has the
// table with its sources; update both when a platform publishes a date.
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace outbox::providers {

struct api_version_life {
  std::string_view provider;  // provider kind: "meta"
  std::string_view version;   // as configured: "v25.0"
  std::chrono::sys_days released;
  std::optional<std::chrono::sys_days> sunset;  // nullopt: not announced yet ("TBD")
};

[[nodiscard]] std::span<const api_version_life> api_version_table();

// The sunset of `version` of `provider`; nullopt when the table has none for it.
[[nodiscard]] std::optional<std::chrono::sys_days> api_version_sunset(std::string_view provider,
                                                                      std::string_view version);

inline constexpr std::chrono::days sunset_warning_window{60};

// The newest version of `provider` in the table ("v27.0"); empty when it has none.
[[nodiscard]] std::string_view newest_api_version(std::string_view provider);

// One line for the log and `status` when `version` stops answering within
// sunset_warning_window of `now` (or already has): "API version v25.0 is retired on
// 2027-02-23 (in 81 days); set api_version to v27.0". nullopt otherwise.
[[nodiscard]] std::optional<std::string> api_sunset_warning(std::string_view provider, std::string_view version,
                                                            std::chrono::system_clock::time_point now);

}  // namespace outbox::providers

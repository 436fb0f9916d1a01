#include "providers/api_versions.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace outbox::providers {

namespace {

using namespace std::chrono;

// Meta: the Marketing API table (developers.facebook.com/docs/marketing-api/
// marketing-api-changelog/versions, read 2026-12-04). The Conversions API follows
// the Marketing schedule, not the Graph API's two years: Meta's v12 announcement
// says an expired Marketing version answers with an error instead of upgrading.
constexpr std::array<api_version_life, 7> table{{
    {"meta", "v27.0", 2026y / November / 4, std::nullopt},
    {"meta", "v26.0", 2026y / July / 29, std::nullopt},
    {"meta", "v25.0", 2026y / February / 18, sys_days{2027y / February / 23}},
    {"meta", "v24.0", 2025y / October / 8, sys_days{2026y / November / 10}},
    {"meta", "v23.0", 2025y / May / 29, sys_days{2026y / June / 9}},
    {"meta", "v22.0", 2025y / January / 21, sys_days{2026y / February / 19}},
    {"meta", "v21.0", 2024y / October / 2, sys_days{2025y / September / 9}},
}};

}  // namespace

std::span<const api_version_life> api_version_table() { return table; }

std::optional<sys_days> api_version_sunset(std::string_view provider, std::string_view version) {
  const auto it = std::find_if(table.begin(), table.end(), [&](const api_version_life& v) {
    return v.provider == provider && v.version == version;
  });
  if (it == table.end()) return std::nullopt;
  return it->sunset;
}

std::string_view newest_api_version(std::string_view provider) {
  const api_version_life* newest = nullptr;
  for (const auto& v : table) {
    if (v.provider == provider && (!newest || v.released > newest->released)) newest = &v;
  }
  return newest ? newest->version : std::string_view{};
}

std::optional<std::string> api_sunset_warning(std::string_view provider, std::string_view version,
                                              system_clock::time_point now) {
  const auto sunset = api_version_sunset(provider, version);
  if (!sunset || system_clock::time_point{*sunset} - now > sunset_warning_window) return std::nullopt;
  const year_month_day day{*sunset};
  const auto left = system_clock::time_point{*sunset} - now;
  const auto days_left = duration_cast<days>(left).count();
  char date[16];
  std::snprintf(date, sizeof date, "%04d-%02u-%02u", int(day.year()), unsigned(day.month()), unsigned(day.day()));
  std::string line = "API version " + std::string{version};
  if (left > system_clock::duration::zero()) {
    line += " is retired on " + std::string{date} + " (in " + std::to_string(days_left) +
            (days_left == 1 ? " day)" : " days)");
  } else {
    line += " was retired on " + std::string{date};
  }
  line += "; set api_version to " + std::string{newest_api_version(provider)};
  return line;
}

}  // namespace outbox::providers

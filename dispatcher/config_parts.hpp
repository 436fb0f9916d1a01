#pragma once
// Internals of load_config() shared by its files (not for other callers):
//   config_read.cpp          the JSON file and the environment -> raw_config
//   config_globals.cpp       raw globals -> typed settings, and the lease budget
//   config_destinations.cpp  raw destinations -> destination_config, the provider registry
//   config_describe.cpp      describe(), secrets masked
//   config.cpp               load_config() itself, config_error, process_environment()
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher/config.hpp"

namespace outbox::config_detail {

// ---- raw values, before parsing ------------------------------------------------

struct raw_value {
  std::string value;
  std::string origin;  // how to name it in a problem: variable name or config file key
};

struct raw_destination {
  std::string origin;  // the first place it was mentioned
  std::map<std::string, raw_value> settings;
  std::map<std::string, raw_value> headers;
};

struct raw_config {
  std::map<std::string, raw_value, std::less<>> globals;
  std::map<std::pair<std::string, std::string>, raw_destination> destinations;  // (provider, name)
};

inline constexpr std::string_view config_file_var = "OUTBOX_CONFIG_FILE";
// The on-call commands' audit name (not a dispatcher setting, but set in the same
// environment, e.g. a container's): `run` accepts it without complaint.
inline constexpr std::string_view operator_var = "OUTBOX_OPERATOR";
inline constexpr std::string_view dest_prefix = "OUTBOX_DEST__";
inline constexpr std::string_view dest_pattern = "OUTBOX_DEST__<PROVIDER>__<DESTINATION>__<KEY>";

// Every global setting, in describe() order.
inline constexpr std::array<std::string_view, 26> global_settings{
    "DATABASE_URL",
    "OUTBOX_INSTANCE_NAME",
    "OUTBOX_WAKE_MODE",
    "OUTBOX_NOTIFY_CHANNEL",
    "OUTBOX_POLL_INTERVAL_MS",
    "OUTBOX_ADAPTIVE_LINGER_MS",
    "OUTBOX_ADAPTIVE_POLL_MS",
    "OUTBOX_ADAPTIVE_TTL_MS",
    "OUTBOX_ADAPTIVE_WAKE_RATE",
    "OUTBOX_CLAIM_BATCH",
    "OUTBOX_MAX_IN_FLIGHT",
    "OUTBOX_LEASE_SECONDS",
    "OUTBOX_REQUEST_TIMEOUT_MS",
    "OUTBOX_CONNECT_TIMEOUT_MS",
    "OUTBOX_SWEEP_INTERVAL_SECONDS",
    "OUTBOX_STATUS_POLL_SECONDS",
    "OUTBOX_SHUTDOWN_GRACE_SECONDS",
    "OUTBOX_LISTEN_HEARTBEAT_SECONDS",
    "OUTBOX_BACKOFF_BASE_SECONDS",
    "OUTBOX_BACKOFF_CAP_SECONDS",
    "OUTBOX_MAX_ATTEMPTS",
    "OUTBOX_RETRY_HORIZON_HOURS",
    "OUTBOX_EXTRA_CA_FILE",
    "OUTBOX_MAX_PAYLOAD_BYTES",
    "OUTBOX_LOG_LEVEL",
    "OUTBOX_METRICS_ADDRESS",
};

// ---- the stages of load_config() ---------------------------------------------------

// config_read.cpp: fill `raw`; later calls win (the environment after the file).
void read_file(const std::string& path, raw_config& raw, std::vector<std::string>& problems);
void read_env(const environment& env, raw_config& raw, std::vector<std::string>& problems);

// config_globals.cpp. True when the lease and both timeouts are valid numbers,
// so that check_lease_budget() has something to check.
[[nodiscard]] bool parse_globals(const raw_config& raw, config& cfg, std::vector<std::string>& problems);
// Once destinations are known (OAuth ones need a longer lease): the lease must
// cover worst_case_attempt() plus lease_margin.
void check_lease_budget(const raw_config& raw, const config& cfg, std::vector<std::string>& problems);

// config_destinations.cpp
void parse_destinations(const raw_config& raw, config& cfg, std::vector<std::string>& problems);

// ---- small helpers (config_parts.cpp) ----------------------------------------------

[[nodiscard]] std::string lower(std::string_view s);
[[nodiscard]] std::string upper(std::string_view s);
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, std::string_view sep);
[[nodiscard]] std::string join(std::span<const std::string_view> items, std::string_view sep);
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

template <std::size_t N>
[[nodiscard]] bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// "; did you mean X?" for the closest candidate within a few typos, else "".
template <typename Range>
[[nodiscard]] std::string suggestion(std::string_view name, const Range& candidates) {
  std::string_view best;
  std::size_t best_distance = 4;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best.empty() ? std::string{} : "; did you mean " + std::string{best} + "?";
}

// OUTBOX_DEST__<PROVIDER>__<NAME>__<KEY>, and its HEADER__<NAME> form.
[[nodiscard]] std::string dest_var(std::string_view provider, std::string_view name, std::string_view key);
[[nodiscard]] std::string header_var(std::string_view provider, std::string_view name, std::string_view header);

[[nodiscard]] bool is_secret_setting(std::string_view name);
// " (got "...")" for problems about non-secret values, so typos are easy to spot.
[[nodiscard]] std::string got(std::string_view value, bool secret);
[[nodiscard]] std::optional<bool> parse_bool(std::string_view text);
// A whole number in [min, max], or nullopt and a problem naming `origin`.
[[nodiscard]] std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max,
                                                        const std::string& origin, bool secret,
                                                        std::vector<std::string>& problems);

}  // namespace outbox::config_detail

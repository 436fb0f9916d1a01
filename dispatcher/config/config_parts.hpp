#pragma once
// Internals of load_config() shared by its files (and its tests; not for other callers):
//   config_read.cpp          the JSON file and the environment -> raw_config
//   config_globals.cpp       the table of global settings, raw globals -> typed settings, the lease budget
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

#include "dispatcher/config/config.hpp"
#include "providers/text.hpp"

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

// ---- the global settings -------------------------------------------------------

class setting_reader;  // config_globals.cpp: raw values by name, and the problems list

enum class setting_kind { whole_number, choice, text };

// One global setting. The table of them (global_settings(), config_globals.cpp)
// is the only list: reading (config_read.cpp), parsing, describe() and the docs
// test (tests/dispatcher/config/config_docs_test.cpp) all walk it, so a setting cannot
// be added to one of them and forgotten in another.
struct global_setting {
  std::string_view name;  // the environment variable; file_key() gives the file's key
  setting_kind kind;
  std::string_view fallback;            // the default as describe() prints it; "" = empty
  std::string_view documented_default;  // the docs' Default cell when it is not `fallback` ("the host name")
  std::int64_t min;                     // whole numbers only: the accepted range
  std::int64_t max;
  std::string_view meaning;                // one line, for people reading the table
  void (*apply)(config&, std::int64_t);    // whole numbers: store a valid value
  void (*read)(setting_reader&, config&);  // the others: parse, validate, store
  std::string (*show)(const config&);      // describe(): the effective value, secrets masked
};

// In describe() order.
[[nodiscard]] std::span<const global_setting> global_settings();
[[nodiscard]] const global_setting* find_global_setting(std::string_view name);
// "database_url", "poll_interval_ms": the variable name without OUTBOX_, lower-case.
[[nodiscard]] std::string file_key(std::string_view name);

// A setting that was removed: still recognized, so whoever sets it learns why it
// went rather than reading "unknown setting". Its one still-meaningful value is
// accepted with a warning (old `dispatcher config` output pasted as an env file).
struct retired_setting {
  std::string_view name;
  std::string_view fixed_value;
  std::string_view why;  // the problem text after "NAME: "
};

inline constexpr std::array<retired_setting, 1> retired_settings{{
    {"OUTBOX_NOTIFY_CHANNEL", "outbox_event_delivery",
     "no longer supported: the channel is fixed (outbox_event_delivery); the trigger in sql/ and the "
     "dispatcher's own signals always notify it, so another channel heard nothing; remove the setting"},
}};

[[nodiscard]] const retired_setting* find_retired_setting(std::string_view name);

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
// One destination; nullopt (and a problem) when the names or the provider are unusable.
[[nodiscard]] std::optional<destination_config> parse_destination(const std::string& provider, const std::string& name,
                                                                  const raw_destination& rd,
                                                                  std::vector<std::string>& problems);

// ---- small helpers (config_parts.cpp) ----------------------------------------------

// ASCII case and booleans are providers/text.hpp's.
using providers::ascii_lowercase;
using providers::parse_bool;
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
// A whole number in [min, max], or nullopt and a problem naming `origin`.
[[nodiscard]] std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max,
                                                        const std::string& origin, bool secret,
                                                        std::vector<std::string>& problems);

}  // namespace outbox::config_detail

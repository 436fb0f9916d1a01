#include "dispatcher/config.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "providers/google_ads_provider.hpp"
#include "providers/google_data_manager_provider.hpp"
#include "providers/meta_provider.hpp"
#include "providers/tiktok_provider.hpp"
#include "providers/webhook_provider.hpp"

extern char** environ;  // POSIX

namespace outbox {
namespace {

using nlohmann::json;

// Add new provider kinds here (their validators live next to the provider).
constexpr std::array<provider_kind, 5> registry{{
    {"webhook", providers::webhook_setting_keys, &providers::validate_webhook_settings},
    {"meta", providers::meta_setting_keys, &providers::validate_meta_settings},
    {"tiktok", providers::tiktok_setting_keys, &providers::validate_tiktok_settings},
    {"google_ads", providers::google_ads_setting_keys, &providers::validate_google_ads_settings},
    {"google_data_manager", providers::google_data_manager_setting_keys,
     &providers::validate_google_data_manager_settings},
}};

constexpr std::string_view config_file_var = "OUTBOX_CONFIG_FILE";
constexpr std::string_view dest_prefix = "OUTBOX_DEST__";
constexpr std::string_view dest_pattern = "OUTBOX_DEST__<PROVIDER>__<DESTINATION>__<KEY>";

// Every global setting, in describe() order.
constexpr std::array<std::string_view, 25> global_settings{
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

constexpr std::array<std::string_view, 4> common_dest_keys{"concurrency", "rate_per_second", "burst", "paused"};

// Framing and hop-by-hop headers belong to the HTTP client, not to configuration.
constexpr std::array<std::string_view, 9> reserved_headers{"host",       "content-length", "transfer-encoding",
                                                           "connection", "keep-alive",     "te",
                                                           "trailer",    "upgrade",        "proxy-connection"};

// ---- small string helpers -------------------------------------------------

std::string lower(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string upper(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = s.find(sep);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + sep.size());
  }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "; did you mean X?" for the closest candidate within a few typos, else "".
template <typename Range>
std::string suggestion(std::string_view name, const Range& candidates) {
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

std::string join(std::span<const std::string_view> items, std::string_view sep) {
  std::string out;
  for (const auto item : items) {
    if (!out.empty()) out.append(sep);
    out.append(item);
  }
  return out;
}

// ---- raw values, before parsing -------------------------------------------

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

std::string dest_var(std::string_view provider, std::string_view name, std::string_view key) {
  return std::string{dest_prefix} + upper(provider) + "__" + upper(name) + "__" + upper(key);
}

std::string header_var(std::string_view provider, std::string_view name, std::string_view header) {
  std::string key = "HEADER__" + upper(header);
  std::replace(key.begin(), key.end(), '-', '_');
  return dest_var(provider, name, key);
}

bool is_secret_setting(std::string_view name) { return name == "DATABASE_URL" || is_secret_key(name); }

// " (got "...")" for problems about non-secret values, so typos are easy to spot.
std::string got(std::string_view value, bool secret) {
  if (secret) return {};
  std::string shown;
  for (const char c : value.substr(0, 60)) shown.push_back(static_cast<unsigned char>(c) < 0x20 ? '?' : c);
  if (value.size() > 60) shown += "...";
  return " (got \"" + shown + "\")";
}

raw_destination& destination_entry(raw_config& raw, std::string provider, std::string name, const std::string& origin) {
  auto [it, inserted] = raw.destinations.try_emplace({std::move(provider), std::move(name)});
  if (inserted) it->second.origin = origin;
  return it->second;
}

// ---- the JSON file ----------------------------------------------------------

std::optional<std::string> scalar_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_unsigned()) return std::to_string(value.get<std::uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number_float()) return value.dump();
  return std::nullopt;
}

std::string file_origin(std::string_view key) { return "config file key \"" + std::string{key} + "\""; }

void read_file_destinations(const json& all, raw_config& raw, std::vector<std::string>& problems) {
  if (!all.is_object()) {
    problems.push_back(file_origin("destinations") + ": must be an object of providers");
    return;
  }
  for (const auto& [provider, named] : all.items()) {
    const std::string provider_path = "destinations." + provider;
    if (!named.is_object()) {
      problems.push_back(file_origin(provider_path) + ": must be an object of destinations");
      continue;
    }
    for (const auto& [name, settings] : named.items()) {
      const std::string path = provider_path + "." + name;
      if (!settings.is_object()) {
        problems.push_back(file_origin(path) + ": must be an object of settings");
        continue;
      }
      raw_destination& dest = destination_entry(raw, lower(provider), lower(name), file_origin(path));
      for (const auto& [key, value] : settings.items()) {
        const std::string key_path = path + "." + key;
        if (lower(key) == "headers" && value.is_object()) {
          for (const auto& [header, header_value] : value.items()) {
            const std::string header_path = key_path + "." + header;
            if (!header_value.is_string()) {
              problems.push_back(file_origin(header_path) + ": must be a string");
              continue;
            }
            dest.headers[lower(header)] = {header_value.get<std::string>(), file_origin(header_path)};
          }
          continue;
        }
        if (value.is_null()) continue;
        auto text = scalar_text(value);
        if (!text) {
          problems.push_back(file_origin(key_path) + ": must be a string, number or boolean");
          continue;
        }
        dest.settings[lower(key)] = {std::move(*text), file_origin(key_path)};
      }
    }
  }
}

// File keys are the variable names without OUTBOX_, any case; the variable name itself works too.
std::string variable_for_file_key(std::string_view key) {
  const std::string name = upper(key);
  if (name == "DATABASE_URL" || name.starts_with("OUTBOX_")) return name;
  return "OUTBOX_" + name;
}

void read_file(const std::string& path, raw_config& raw, std::vector<std::string>& problems) {
  const std::string origin = std::string{config_file_var} + " \"" + path + "\"";
  std::ifstream in{path, std::ios::binary};
  if (!in) {
    problems.push_back(origin + ": cannot be read: " + std::strerror(errno));
    return;
  }
  const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  json doc;
  try {
    doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // Only the position: the parser's own message quotes the text, which may be a secret.
    problems.push_back(origin + ": not valid JSON (error at byte " + std::to_string(e.byte) + ")");
    return;
  }
  if (!doc.is_object()) {
    problems.push_back(origin + ": the top level must be a JSON object");
    return;
  }
  for (const auto& [key, value] : doc.items()) {
    if (lower(key) == "destinations") {
      read_file_destinations(value, raw, problems);
      continue;
    }
    const std::string name = variable_for_file_key(key);
    if (!contains(global_settings, name)) {
      std::vector<std::string> file_keys;
      for (const auto setting : global_settings) {
        file_keys.push_back(setting == "DATABASE_URL" ? "database_url" : lower(setting.substr(7)));
      }
      problems.push_back(file_origin(key) + ": unknown setting" + suggestion(lower(key), file_keys));
      continue;
    }
    if (value.is_null()) continue;
    auto text = scalar_text(value);
    if (!text) {
      problems.push_back(file_origin(key) + ": must be a string, number or boolean");
      continue;
    }
    raw.globals[name] = {std::move(*text), file_origin(key)};
  }
}

// ---- the environment ----------------------------------------------------------

void read_env_destination(const std::string& var, const std::string& value, raw_config& raw,
                          std::vector<std::string>& problems) {
  const auto parts = split(std::string_view{var}.substr(dest_prefix.size()), "__");
  const bool any_empty = std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); });
  const bool is_header = parts.size() >= 3 && upper(parts[2]) == "HEADER";
  if (any_empty || parts.size() < 3 || (is_header && parts.size() != 4) || (!is_header && parts.size() != 3)) {
    problems.push_back(var + ": malformed destination setting; expected " + std::string{dest_pattern} + " or " +
                       "OUTBOX_DEST__<PROVIDER>__<DESTINATION>__HEADER__<NAME>");
    return;
  }
  raw_destination& dest = destination_entry(raw, lower(parts[0]), lower(parts[1]), var);
  if (is_header) {
    std::string header = lower(parts[3]);
    std::replace(header.begin(), header.end(), '_', '-');  // variable names cannot contain '-'
    dest.headers[header] = {value, var};
  } else {
    dest.settings[lower(parts[2])] = {value, var};
  }
}

void read_env(const environment& env, raw_config& raw, std::vector<std::string>& problems) {
  for (const auto& [var, value] : env) {
    if (contains(global_settings, var)) {
      raw.globals[var] = {value, var};
    } else if (var.starts_with(dest_prefix)) {
      read_env_destination(var, value, raw, problems);
    } else if (var.starts_with("OUTBOX_") && var != config_file_var) {
      std::string hint = suggestion(var, global_settings);
      if (hint.empty() && var.starts_with("OUTBOX_DEST")) {
        hint = "; destination settings look like " + std::string{dest_pattern};
      }
      // Name only: an unknown variable may well hold a secret.
      problems.push_back(var + ": unknown setting" + hint);
    }
  }
}

// ---- typed parsing -------------------------------------------------------------

class reader {
 public:
  reader(const std::map<std::string, raw_value, std::less<>>& raw, std::vector<std::string>& problems)
      : raw_(raw), problems_(problems) {}

  // Raw value of a setting, or nullptr when unset.
  [[nodiscard]] const raw_value* find(std::string_view name) const {
    const auto it = raw_.find(name);
    return it == raw_.end() ? nullptr : &it->second;
  }

  [[nodiscard]] std::string origin(std::string_view name) const {
    const raw_value* v = find(name);
    return v ? v->origin : std::string{name};
  }

  void problem(std::string_view name, std::string_view message) {
    problems_.push_back(origin(name) + ": " + std::string{message});
  }

  // Default when unset or empty; nullopt (and a problem) when invalid.
  std::optional<std::int64_t> integer(std::string_view name, std::int64_t fallback, std::int64_t min,
                                      std::int64_t max) {
    const raw_value* v = find(name);
    if (!v || v->value.empty()) return fallback;
    return parse_integer(v->value, min, max, v->origin, is_secret_setting(name), problems_);
  }

  static std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max,
                                                   const std::string& origin, bool secret,
                                                   std::vector<std::string>& problems) {
    std::int64_t parsed = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc{} || end != text.data() + text.size() || parsed < min || parsed > max) {
      problems.push_back(origin + ": must be a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max) + got(text, secret));
      return std::nullopt;
    }
    return parsed;
  }

  // Unset -> fallback; set (even empty) -> the value.
  [[nodiscard]] std::string text(std::string_view name, std::string_view fallback) const {
    const raw_value* v = find(name);
    return v ? v->value : std::string{fallback};
  }

 private:
  const std::map<std::string, raw_value, std::less<>>& raw_;
  std::vector<std::string>& problems_;
};

std::optional<bool> parse_bool(std::string_view text) {
  const std::string v = lower(text);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return std::nullopt;
}

bool valid_name(std::string_view name) {
  return !name.empty() && name.front() != '_' && name.back() != '_' &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool valid_channel(std::string_view name) {
  const auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  return !name.empty() && name.size() <= 63 && ok_first(name.front()) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return ok_first(c) || (c >= '0' && c <= '9'); });
}

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view{"!#$%&'*+-.^_`|~"}.find(c) != std::string_view::npos;
}

// "host:port" or "[v6]:port", port 1..65535.
bool valid_listen_address(std::string_view address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.front() == '[' ? host.back() != ']' || host.size() < 3 : host.find(':') != std::string_view::npos) {
    return false;
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  return ec == std::errc{} && end == port.data() + port.size() && value >= 1 && value <= 65535;
}

void parse_globals(const raw_config& raw, config& cfg, std::vector<std::string>& problems) {
  reader r{raw.globals, problems};
  using std::chrono::hours;
  using std::chrono::milliseconds;
  using std::chrono::seconds;

  cfg.database_url = r.text("DATABASE_URL", "");

  if (const auto name = r.text("OUTBOX_INSTANCE_NAME", ""); !name.empty()) {
    const bool printable = std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (!printable || name.size() > 200) {
      r.problem("OUTBOX_INSTANCE_NAME",
                "must be 1 to 200 printable ASCII characters without spaces" + got(name, false));
    } else {
      cfg.instance_name = name;
    }
  }

  if (const auto mode = lower(r.text("OUTBOX_WAKE_MODE", "")); mode == "poll") {
    cfg.wake = wake_mode::poll;
  } else if (mode == "listen" || mode.empty()) {
    cfg.wake = wake_mode::listen;
  } else {
    r.problem("OUTBOX_WAKE_MODE", "must be listen or poll" + got(mode, false));
  }

  if (const auto channel = r.text("OUTBOX_NOTIFY_CHANNEL", ""); !channel.empty()) {
    if (valid_channel(channel)) {
      cfg.notify_channel = channel;
    } else {
      r.problem("OUTBOX_NOTIFY_CHANNEL",
                "must be a lower-case SQL identifier (a-z, 0-9, _; at most 63 bytes)" + got(channel, false));
    }
  }

  const auto poll = r.integer("OUTBOX_POLL_INTERVAL_MS", 2000, 100, 60000);
  const auto linger = r.integer("OUTBOX_ADAPTIVE_LINGER_MS", 250, 1, 60000);
  const auto awake_poll = r.integer("OUTBOX_ADAPTIVE_POLL_MS", 20, 1, 1000);
  const auto awake_ttl = r.integer("OUTBOX_ADAPTIVE_TTL_MS", 10000, 500, 600000);
  const auto wake_rate = r.integer("OUTBOX_ADAPTIVE_WAKE_RATE", 500, 1, 1000000);
  const auto batch = r.integer("OUTBOX_CLAIM_BATCH", 100, 1, 1000);
  const auto in_flight = r.integer("OUTBOX_MAX_IN_FLIGHT", 256, 1, 100000);
  const auto lease = r.integer("OUTBOX_LEASE_SECONDS", 30, 1, 86400);
  const auto request = r.integer("OUTBOX_REQUEST_TIMEOUT_MS", 10000, 100, 600000);
  const auto connect = r.integer("OUTBOX_CONNECT_TIMEOUT_MS", 3000, 100, 600000);
  const auto sweep = r.integer("OUTBOX_SWEEP_INTERVAL_SECONDS", 15, 1, 86400);
  const auto grace = r.integer("OUTBOX_SHUTDOWN_GRACE_SECONDS", 10, 0, 3600);
  const auto heartbeat = r.integer("OUTBOX_LISTEN_HEARTBEAT_SECONDS", 10, 1, 3600);
  const auto base = r.integer("OUTBOX_BACKOFF_BASE_SECONDS", 2, 1, 86400);
  const auto cap = r.integer("OUTBOX_BACKOFF_CAP_SECONDS", 3600, 1, 7 * 86400);
  const auto attempts = r.integer("OUTBOX_MAX_ATTEMPTS", 12, 1, 1000);
  const auto horizon = r.integer("OUTBOX_RETRY_HORIZON_HOURS", 36, 1, 24 * 365);
  const auto payload = r.integer("OUTBOX_MAX_PAYLOAD_BYTES", 262144, 1, 64 * 1024 * 1024);

  if (poll) cfg.poll_interval = milliseconds{*poll};
  if (linger) cfg.adaptive_linger = milliseconds{*linger};
  if (awake_poll) cfg.adaptive_poll = milliseconds{*awake_poll};
  if (awake_ttl) cfg.adaptive_ttl = milliseconds{*awake_ttl};
  if (wake_rate) cfg.adaptive_wake_rate = static_cast<int>(*wake_rate);
  if (batch) cfg.claim_batch = static_cast<int>(*batch);
  if (in_flight) cfg.max_in_flight = static_cast<int>(*in_flight);
  if (lease) cfg.lease = seconds{*lease};
  if (request) cfg.request_timeout = milliseconds{*request};
  if (connect) cfg.connect_timeout = milliseconds{*connect};
  if (sweep) cfg.sweep_interval = seconds{*sweep};
  if (grace) cfg.shutdown_grace = seconds{*grace};
  if (heartbeat) cfg.listen_heartbeat = seconds{*heartbeat};
  if (base) cfg.backoff.base = seconds{*base};
  if (cap) cfg.backoff.cap = seconds{*cap};
  if (attempts) cfg.backoff.max_attempts = static_cast<int>(*attempts);
  if (horizon) cfg.backoff.retry_horizon = hours{*horizon};
  if (payload) cfg.max_payload_bytes = static_cast<std::size_t>(*payload);

  if (lease && request && *lease * 1000 <= *request + lease_margin.count() * 1000) {
    const std::int64_t minimum = (*request + lease_margin.count() * 1000) / 1000 + 1;
    r.problem("OUTBOX_LEASE_SECONDS",
              "must exceed OUTBOX_REQUEST_TIMEOUT_MS plus a " + std::to_string(lease_margin.count()) +
                  " s margin (lease " + std::to_string(*lease) + " s, request timeout " + std::to_string(*request) +
                  " ms: use at least " + std::to_string(minimum) +
                  " s), or another dispatcher may claim and resend a row whose request is still running");
  }
  if (connect && request && *connect > *request) {
    r.problem("OUTBOX_CONNECT_TIMEOUT_MS", "must not exceed OUTBOX_REQUEST_TIMEOUT_MS (" + std::to_string(*request) +
                                               " ms), which is the deadline for the whole request");
  }
  if (base && cap && *cap < *base) {
    r.problem("OUTBOX_BACKOFF_CAP_SECONDS", "must be at least OUTBOX_BACKOFF_BASE_SECONDS (" + std::to_string(*base) +
                                                ")" + got(std::to_string(*cap), false));
  }
  if (horizon && *horizon > 48) {
    cfg.warnings.push_back(
        "OUTBOX_RETRY_HORIZON_HOURS=" + std::to_string(*horizon) +
        " goes past the 48 h deduplication window of Meta and TikTok: late retries may be counted twice");
  }

  cfg.extra_ca_file = r.text("OUTBOX_EXTRA_CA_FILE", "");
  if (!cfg.extra_ca_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(cfg.extra_ca_file, ec)) {
      r.problem("OUTBOX_EXTRA_CA_FILE", "no such file \"" + cfg.extra_ca_file + "\"");
    }
  }

  if (const auto level = r.text("OUTBOX_LOG_LEVEL", ""); !level.empty()) {
    if (const auto parsed = parse_log_level(level)) {
      cfg.min_log_level = *parsed;
    } else {
      r.problem("OUTBOX_LOG_LEVEL", "must be debug, info, warn or error" + got(level, false));
    }
  }

  if (const raw_value* metrics = r.find("OUTBOX_METRICS_ADDRESS")) {
    if (metrics->value.empty()) {
      cfg.metrics_address.reset();
    } else if (valid_listen_address(metrics->value)) {
      cfg.metrics_address = metrics->value;
    } else {
      r.problem("OUTBOX_METRICS_ADDRESS",
                "must be host:port or [ipv6]:port with a port from 1 to 65535, or empty to disable" +
                    got(metrics->value, false));
    }
  }
}

const provider_kind* find_kind(std::string_view kind) {
  const auto it =
      std::find_if(registry.begin(), registry.end(), [&](const provider_kind& k) { return k.kind == kind; });
  return it == registry.end() ? nullptr : &*it;
}

void parse_common_setting(const std::string& key, const raw_value& v, destination_config& d, bool& burst_set,
                          std::vector<std::string>& problems) {
  if (v.value.empty()) return;  // keep the default
  if (key == "concurrency") {
    if (const auto n = reader::parse_integer(v.value, 1, 1024, v.origin, false, problems))
      d.concurrency = static_cast<int>(*n);
  } else if (key == "burst") {
    if (const auto n = reader::parse_integer(v.value, 1, 1000000, v.origin, false, problems)) {
      d.burst = static_cast<int>(*n);
      burst_set = true;
    }
  } else if (key == "rate_per_second") {
    double rate = 0;
    const auto [end, ec] = std::from_chars(v.value.data(), v.value.data() + v.value.size(), rate);
    if (ec != std::errc{} || end != v.value.data() + v.value.size() || !std::isfinite(rate) || rate < 0 || rate > 1e6) {
      problems.push_back(v.origin + ": must be a number from 0 (unlimited) to 1000000" + got(v.value, false));
    } else {
      d.rate_per_second = rate;
    }
  } else if (key == "paused") {
    if (const auto b = parse_bool(v.value)) {
      d.paused = *b;
    } else {
      problems.push_back(v.origin + ": must be true or false" + got(v.value, false));
    }
  }
}

void parse_headers(const raw_destination& raw, destination_config& d, std::vector<std::string>& problems) {
  for (const auto& [name, v] : raw.headers) {
    const bool secret = is_secret_key(name);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_tchar)) {
      problems.push_back(v.origin + ": \"" + name + "\" is not a valid header name");
    } else if (contains(reserved_headers, name)) {
      problems.push_back(v.origin + ": header \"" + name + "\" is set by the HTTP client and cannot be configured");
    } else if (std::any_of(v.value.begin(), v.value.end(),
                           [](char c) { return c == '\r' || c == '\n' || c == '\0'; })) {
      problems.push_back(v.origin + ": header value must not contain CR, LF or NUL" + got(v.value, secret));
    } else {
      d.extra_headers.emplace_back(name, v.value);
    }
  }
}

void parse_destinations(const raw_config& raw, config& cfg, std::vector<std::string>& problems) {
  for (const auto& [id, rd] : raw.destinations) {
    const auto& [provider, name] = id;
    if (!valid_name(provider) || !valid_name(name)) {
      problems.push_back(rd.origin + ": provider and destination names may only contain a-z, 0-9 and inner _");
      continue;
    }
    const provider_kind* kind = find_kind(provider);
    if (kind == nullptr) {
      std::vector<std::string_view> known;
      for (const auto& k : registry) known.push_back(k.kind);
      problems.push_back(rd.origin + ": unknown provider \"" + provider + "\" (known: " + join(known, ", ") + ")");
      continue;
    }
    destination_config d;
    d.provider = provider;
    d.name = name;
    bool burst_set = false;
    for (const auto& [key, v] : rd.settings) {
      if (contains(common_dest_keys, key)) {
        parse_common_setting(key, v, d, burst_set, problems);
      } else if (std::find(kind->setting_keys.begin(), kind->setting_keys.end(), key) != kind->setting_keys.end()) {
        d.settings[key] = v.value;
      } else {
        std::vector<std::string_view> known{kind->setting_keys.begin(), kind->setting_keys.end()};
        known.insert(known.end(), common_dest_keys.begin(), common_dest_keys.end());
        known.push_back("header__<name>");
        problems.push_back(v.origin + ": unknown setting \"" + key + "\" for a " + provider +
                           " destination (known: " + join(known, ", ") + ")" + suggestion(key, known));
      }
    }
    if (!burst_set) d.burst = std::max(1, static_cast<int>(std::ceil(d.rate_per_second)));
    parse_headers(rd, d, problems);
    for (const auto& [key, message] : kind->validate(d.settings)) {
      const auto it = rd.settings.find(key);
      problems.push_back((it != rd.settings.end() ? it->second.origin : dest_var(provider, name, key)) + ": " +
                         message);
    }
    cfg.destinations.push_back(std::move(d));
  }
  if (cfg.destinations.empty()) {
    cfg.warnings.push_back("no destinations configured (" + std::string{dest_pattern} + "): nothing can be delivered");
  }
}

std::string format_number(double value) {
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  return ec == std::errc{} ? std::string(buf.data(), end) : std::string{"?"};
}

std::string shown(std::string_view key, std::string_view value) {
  if (value.empty()) return {};
  return is_secret_key(key) ? std::string{"***"} : redact_url(value);
}

}  // namespace

std::string_view destination_config::setting(std::string_view key) const {
  const auto it = settings.find(std::string{key});
  return it == settings.end() ? std::string_view{} : std::string_view{it->second};
}

const destination_config* config::find_destination(std::string_view provider, std::string_view name) const {
  const auto it = std::find_if(destinations.begin(), destinations.end(),
                               [&](const destination_config& d) { return d.provider == provider && d.name == name; });
  return it == destinations.end() ? nullptr : &*it;
}

config_error::config_error(std::vector<std::string> problems)
    : std::runtime_error([&] {
        std::string text = "invalid configuration (" + std::to_string(problems.size()) +
                           (problems.size() == 1 ? " problem):" : " problems):");
        for (const auto& p : problems) text += "\n  " + p;
        return text;
      }()),
      problems_(std::move(problems)) {}

environment process_environment() {
  environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text{*entry};
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string{text.substr(0, eq)}, std::string{text.substr(eq + 1)});
  }
  return env;
}

config load_config(const environment& env) {
  std::vector<std::string> problems;
  raw_config raw;
  if (const auto file = env.find(config_file_var); file != env.end() && !file->second.empty()) {
    read_file(file->second, raw, problems);
  }
  read_env(env, raw, problems);  // after the file: the environment wins

  config cfg;
  parse_globals(raw, cfg, problems);
  parse_destinations(raw, cfg, problems);
  if (!problems.empty()) throw config_error(std::move(problems));
  return cfg;
}

std::string describe(const config& cfg) {
  std::string out = "# effective configuration (secrets shown as ***)\n";
  const auto line = [&](std::string_view name, std::string_view value) {
    out.append(name).append("=").append(value).append("\n");
  };
  line("DATABASE_URL", redact_url(cfg.database_url));
  line("OUTBOX_INSTANCE_NAME", cfg.instance_name.value_or(""));
  line("OUTBOX_WAKE_MODE", cfg.wake == wake_mode::listen ? "listen" : "poll");
  line("OUTBOX_NOTIFY_CHANNEL", cfg.notify_channel);
  line("OUTBOX_POLL_INTERVAL_MS", std::to_string(cfg.poll_interval.count()));
  line("OUTBOX_ADAPTIVE_LINGER_MS", std::to_string(cfg.adaptive_linger.count()));
  line("OUTBOX_ADAPTIVE_POLL_MS", std::to_string(cfg.adaptive_poll.count()));
  line("OUTBOX_ADAPTIVE_TTL_MS", std::to_string(cfg.adaptive_ttl.count()));
  line("OUTBOX_ADAPTIVE_WAKE_RATE", std::to_string(cfg.adaptive_wake_rate));
  line("OUTBOX_CLAIM_BATCH", std::to_string(cfg.claim_batch));
  line("OUTBOX_MAX_IN_FLIGHT", std::to_string(cfg.max_in_flight));
  line("OUTBOX_LEASE_SECONDS", std::to_string(cfg.lease.count()));
  line("OUTBOX_REQUEST_TIMEOUT_MS", std::to_string(cfg.request_timeout.count()));
  line("OUTBOX_CONNECT_TIMEOUT_MS", std::to_string(cfg.connect_timeout.count()));
  line("OUTBOX_SWEEP_INTERVAL_SECONDS", std::to_string(cfg.sweep_interval.count()));
  line("OUTBOX_SHUTDOWN_GRACE_SECONDS", std::to_string(cfg.shutdown_grace.count()));
  line("OUTBOX_LISTEN_HEARTBEAT_SECONDS", std::to_string(cfg.listen_heartbeat.count()));
  line("OUTBOX_BACKOFF_BASE_SECONDS", std::to_string(cfg.backoff.base.count()));
  line("OUTBOX_BACKOFF_CAP_SECONDS", std::to_string(cfg.backoff.cap.count()));
  line("OUTBOX_MAX_ATTEMPTS", std::to_string(cfg.backoff.max_attempts));
  line("OUTBOX_RETRY_HORIZON_HOURS",
       std::to_string(std::chrono::duration_cast<std::chrono::hours>(cfg.backoff.retry_horizon).count()));
  line("OUTBOX_EXTRA_CA_FILE", cfg.extra_ca_file);
  line("OUTBOX_MAX_PAYLOAD_BYTES", std::to_string(cfg.max_payload_bytes));
  line("OUTBOX_LOG_LEVEL", to_string(cfg.min_log_level));
  line("OUTBOX_METRICS_ADDRESS", cfg.metrics_address.value_or(""));
  for (const auto& d : cfg.destinations) {
    for (const auto& [key, value] : d.settings) line(dest_var(d.provider, d.name, key), shown(key, value));
    line(dest_var(d.provider, d.name, "concurrency"), std::to_string(d.concurrency));
    line(dest_var(d.provider, d.name, "rate_per_second"), format_number(d.rate_per_second));
    line(dest_var(d.provider, d.name, "burst"), std::to_string(d.burst));
    line(dest_var(d.provider, d.name, "paused"), d.paused ? "true" : "false");
    for (const auto& [header, value] : d.extra_headers)
      line(header_var(d.provider, d.name, header), shown(header, value));
  }
  for (const auto& warning : cfg.warnings) out.append("# warning: ").append(warning).append("\n");
  return out;
}

std::span<const provider_kind> provider_kinds() { return registry; }

}  // namespace outbox

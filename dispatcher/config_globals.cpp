// Typed parsing of the global settings, the relations between them, and the
// lease budget (which also depends on the destinations).
#include <charconv>
#include <filesystem>

#include "dispatcher/config_parts.hpp"
#include "dispatcher/lease_budget.hpp"

namespace outbox::config_detail {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

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

  // Unset -> fallback; set (even empty) -> the value.
  [[nodiscard]] std::string text(std::string_view name, std::string_view fallback) const {
    const raw_value* v = find(name);
    return v ? v->value : std::string{fallback};
  }

 private:
  const std::map<std::string, raw_value, std::less<>>& raw_;
  std::vector<std::string>& problems_;
};

// A whole-number setting: name, default, range, and where it goes.
struct integer_setting {
  std::string_view name;
  std::int64_t fallback;
  std::int64_t min;
  std::int64_t max;
  void (*apply)(config&, std::int64_t);
};

// clang-format off
constexpr std::array<integer_setting, 19> integer_settings{{
    {"OUTBOX_POLL_INTERVAL_MS", 2000, 100, 60000, [](config& c, std::int64_t v) { c.poll_interval = milliseconds{v}; }},
    {"OUTBOX_ADAPTIVE_LINGER_MS", 250, 1, 60000, [](config& c, std::int64_t v) { c.adaptive_linger = milliseconds{v}; }},
    {"OUTBOX_ADAPTIVE_POLL_MS", 20, 1, 1000, [](config& c, std::int64_t v) { c.adaptive_poll = milliseconds{v}; }},
    {"OUTBOX_ADAPTIVE_TTL_MS", 10000, 500, 600000, [](config& c, std::int64_t v) { c.adaptive_ttl = milliseconds{v}; }},
    {"OUTBOX_ADAPTIVE_WAKE_RATE", 500, 1, 1000000, [](config& c, std::int64_t v) { c.adaptive_wake_rate = static_cast<int>(v); }},
    {"OUTBOX_CLAIM_BATCH", 100, 1, 1000, [](config& c, std::int64_t v) { c.claim_batch = static_cast<int>(v); }},
    {"OUTBOX_MAX_IN_FLIGHT", 256, 1, 100000, [](config& c, std::int64_t v) { c.max_in_flight = static_cast<int>(v); }},
    {"OUTBOX_LEASE_SECONDS", 60, 1, 86400, [](config& c, std::int64_t v) { c.lease = seconds{v}; }},
    {"OUTBOX_REQUEST_TIMEOUT_MS", 10000, 100, 600000, [](config& c, std::int64_t v) { c.request_timeout = milliseconds{v}; }},
    {"OUTBOX_CONNECT_TIMEOUT_MS", 3000, 100, 600000, [](config& c, std::int64_t v) { c.connect_timeout = milliseconds{v}; }},
    {"OUTBOX_SWEEP_INTERVAL_SECONDS", 15, 1, 86400, [](config& c, std::int64_t v) { c.sweep_interval = seconds{v}; }},
    {"OUTBOX_STATUS_POLL_SECONDS", 60, 1, 86400, [](config& c, std::int64_t v) { c.status_poll_interval = seconds{v}; }},
    {"OUTBOX_SHUTDOWN_GRACE_SECONDS", 10, 0, 3600, [](config& c, std::int64_t v) { c.shutdown_grace = seconds{v}; }},
    {"OUTBOX_LISTEN_HEARTBEAT_SECONDS", 10, 1, 3600, [](config& c, std::int64_t v) { c.listen_heartbeat = seconds{v}; }},
    {"OUTBOX_BACKOFF_BASE_SECONDS", 2, 1, 86400, [](config& c, std::int64_t v) { c.backoff.base = seconds{v}; }},
    {"OUTBOX_BACKOFF_CAP_SECONDS", 3600, 1, 7 * 86400, [](config& c, std::int64_t v) { c.backoff.cap = seconds{v}; }},
    {"OUTBOX_MAX_ATTEMPTS", 12, 1, 1000, [](config& c, std::int64_t v) { c.backoff.max_attempts = static_cast<int>(v); }},
    {"OUTBOX_RETRY_HORIZON_HOURS", 36, 1, 24 * 365, [](config& c, std::int64_t v) { c.backoff.retry_horizon = hours{v}; }},
    {"OUTBOX_MAX_PAYLOAD_BYTES", 262144, 1, 64 * 1024 * 1024, [](config& c, std::int64_t v) { c.max_payload_bytes = static_cast<std::size_t>(v); }},
}};
// clang-format on

// The valid whole-number settings by name (defaults included); invalid ones are
// left out, so relations between settings are only checked between valid values.
using valid_numbers = std::map<std::string_view, std::int64_t>;

valid_numbers parse_numbers(reader& r, config& cfg) {
  valid_numbers valid;
  for (const auto& s : integer_settings) {
    if (const auto v = r.integer(s.name, s.fallback, s.min, s.max)) {
      s.apply(cfg, *v);
      valid.emplace(s.name, *v);
    }
  }
  return valid;
}

bool valid_channel(std::string_view name) {
  const auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  return !name.empty() && name.size() <= 63 && ok_first(name.front()) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return ok_first(c) || (c >= '0' && c <= '9'); });
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

void parse_identity(reader& r, config& cfg) {
  cfg.database_url = r.text("DATABASE_URL", "");
  if (const auto name = r.text("OUTBOX_INSTANCE_NAME", ""); !name.empty()) {
    const bool printable = std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (!printable || name.size() > 200) {
      r.problem("OUTBOX_INSTANCE_NAME", "must be 1 to 200 printable ASCII characters without spaces" + got(name, false));
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
}

void check_relations(reader& r, const valid_numbers& n, config& cfg) {
  const auto has = [&](std::string_view name) { return n.contains(name); };
  if (has("OUTBOX_CONNECT_TIMEOUT_MS") && has("OUTBOX_REQUEST_TIMEOUT_MS") &&
      n.at("OUTBOX_CONNECT_TIMEOUT_MS") > n.at("OUTBOX_REQUEST_TIMEOUT_MS")) {
    r.problem("OUTBOX_CONNECT_TIMEOUT_MS", "must not exceed OUTBOX_REQUEST_TIMEOUT_MS (" +
                                               std::to_string(n.at("OUTBOX_REQUEST_TIMEOUT_MS")) +
                                               " ms), which is the deadline for the whole request");
  }
  if (has("OUTBOX_BACKOFF_BASE_SECONDS") && has("OUTBOX_BACKOFF_CAP_SECONDS") &&
      n.at("OUTBOX_BACKOFF_CAP_SECONDS") < n.at("OUTBOX_BACKOFF_BASE_SECONDS")) {
    r.problem("OUTBOX_BACKOFF_CAP_SECONDS", "must be at least OUTBOX_BACKOFF_BASE_SECONDS (" +
                                                std::to_string(n.at("OUTBOX_BACKOFF_BASE_SECONDS")) + ")" +
                                                got(std::to_string(n.at("OUTBOX_BACKOFF_CAP_SECONDS")), false));
  }
  if (has("OUTBOX_RETRY_HORIZON_HOURS") && n.at("OUTBOX_RETRY_HORIZON_HOURS") > 48) {
    cfg.warnings.push_back(
        "OUTBOX_RETRY_HORIZON_HOURS=" + std::to_string(n.at("OUTBOX_RETRY_HORIZON_HOURS")) +
        " goes past the 48 h deduplication window of Meta and TikTok: late retries may be counted twice");
  }
}

void parse_operations(reader& r, config& cfg) {
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
      r.problem("OUTBOX_METRICS_ADDRESS", "must be host:port or [ipv6]:port with a port from 1 to 65535, or empty to "
                                          "disable" + got(metrics->value, false));
    }
  }
}

// The first destination whose provider fetches OAuth tokens, as "provider/name".
std::optional<std::string> first_oauth_destination(const config& cfg) {
  for (const auto& d : cfg.destinations) {
    const auto kinds = provider_kinds();
    const auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const provider_kind& k) { return k.kind == d.provider; });
    if (kind != kinds.end() && kind->uses_oauth) return d.provider + "/" + d.name;
  }
  return std::nullopt;
}

}  // namespace

bool parse_globals(const raw_config& raw, config& cfg, std::vector<std::string>& problems) {
  reader r{raw.globals, problems};
  parse_identity(r, cfg);
  const valid_numbers numbers = parse_numbers(r, cfg);
  check_relations(r, numbers, cfg);
  parse_operations(r, cfg);
  return numbers.contains("OUTBOX_LEASE_SECONDS") && numbers.contains("OUTBOX_REQUEST_TIMEOUT_MS") &&
         numbers.contains("OUTBOX_CONNECT_TIMEOUT_MS");
}

void check_lease_budget(const raw_config& raw, const config& cfg, std::vector<std::string>& problems) {
  const auto oauth = first_oauth_destination(cfg);
  // The engine gives the TLS handshake the connect budget again (dispatcher/engine.cpp).
  const auto worst = worst_case_attempt(cfg.connect_timeout, cfg.connect_timeout, cfg.request_timeout, oauth.has_value());
  const auto minimum = minimum_lease(worst, lease_margin);
  if (cfg.lease >= minimum) return;
  const auto ms = [](milliseconds d) { return std::to_string(d.count()) + " ms"; };
  const std::string exchange = "connect " + ms(cfg.connect_timeout) + " + TLS handshake " + ms(cfg.connect_timeout) +
                               " + request " + ms(cfg.request_timeout);
  std::string why = "two tries of (" + exchange + "), the second when a kept-alive connection turned out stale";
  if (oauth) why = "an OAuth token fetch for " + *oauth + " and " + why;
  const auto it = raw.globals.find("OUTBOX_LEASE_SECONDS");
  const std::string origin = it != raw.globals.end() ? it->second.origin : "OUTBOX_LEASE_SECONDS";
  problems.push_back(origin + ": must be at least " + std::to_string(minimum.count()) + " s (got " +
                     std::to_string(cfg.lease.count()) + " s): one attempt can take " + ms(worst) + " (" + why +
                     ") and the lease needs a " + std::to_string(lease_margin.count()) +
                     " s margin on top, or another dispatcher may claim and resend a row whose request is still "
                     "running; raise OUTBOX_LEASE_SECONDS or lower OUTBOX_REQUEST_TIMEOUT_MS / "
                     "OUTBOX_CONNECT_TIMEOUT_MS");
}

}  // namespace outbox::config_detail

// The table of global settings (name, default, range or kind, meaning, how to
// parse and show each), typed parsing through it, the relations between
// settings, and the lease budget (which also depends on the destinations).
#include <charconv>
#include <filesystem>

#include "dispatcher/config/config_parts.hpp"
#include "dispatcher/engine/lease_budget.hpp"

namespace outbox::config_detail {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Raw values by name, and where their problems go.
class setting_reader {
 public:
  setting_reader(const std::map<std::string, raw_value, std::less<>>& raw, std::vector<std::string>& problems)
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

  // The default when unset or empty; nullopt (and a problem) when invalid.
  std::optional<std::int64_t> integer(const global_setting& s) {
    const raw_value* v = find(s.name);
    if (!v || v->value.empty()) return parse_integer(s.fallback, s.min, s.max, std::string{s.name}, false, problems_);
    return parse_integer(v->value, s.min, s.max, v->origin, is_secret_setting(s.name), problems_);
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

namespace {

// ---- the settings that are not whole numbers ------------------------------------

void read_database_url(setting_reader& r, config& cfg) { cfg.database_url = r.text("DATABASE_URL", ""); }

void read_instance_name(setting_reader& r, config& cfg) {
  const auto name = r.text("OUTBOX_INSTANCE_NAME", "");
  if (name.empty()) return;
  const bool printable = std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (!printable || name.size() > 200) {
    r.problem("OUTBOX_INSTANCE_NAME", "must be 1 to 200 printable ASCII characters without spaces" + got(name, false));
  } else {
    cfg.instance_name = name;
  }
}

void read_wake_mode(setting_reader& r, config& cfg) {
  if (const auto mode = ascii_lowercase(r.text("OUTBOX_WAKE_MODE", "")); mode == "poll") {
    cfg.wake = wake_mode::poll;
  } else if (mode == "listen" || mode.empty()) {
    cfg.wake = wake_mode::listen;
  } else {
    r.problem("OUTBOX_WAKE_MODE", "must be listen or poll" + got(mode, false));
  }
}

void read_claim_synchronous_commit(setting_reader& r, config& cfg) {
  if (const auto value = ascii_lowercase(r.text("OUTBOX_CLAIM_SYNCHRONOUS_COMMIT", "")); value == "on") {
    cfg.claim_synchronous_commit = true;
  } else if (value == "off" || value.empty()) {
    cfg.claim_synchronous_commit = false;
  } else {
    r.problem("OUTBOX_CLAIM_SYNCHRONOUS_COMMIT", "must be on or off" + got(value, false));
  }
}

void read_extra_ca_file(setting_reader& r, config& cfg) {
  cfg.extra_ca_file = r.text("OUTBOX_EXTRA_CA_FILE", "");
  if (cfg.extra_ca_file.empty()) return;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(cfg.extra_ca_file, ec)) {
    r.problem("OUTBOX_EXTRA_CA_FILE", "no such file \"" + cfg.extra_ca_file + "\"");
  }
}

// The key files must exist; whether they hold a key is checked where they are read
// (the message then names the destinations whose secrets they open).
void read_key_file(setting_reader& r, const char* name, std::string& file) {
  file = r.text(name, "");
  std::error_code ec;
  if (!file.empty() && !std::filesystem::is_regular_file(file, ec)) r.problem(name, "no such file \"" + file + "\"");
}

void read_sealing_key_files(setting_reader& r, config& cfg) {
  read_key_file(r, "OUTBOX_SEALING_KEY_FILE", cfg.sealing_key_file);
}

void read_previous_sealing_key_file(setting_reader& r, config& cfg) {
  read_key_file(r, "OUTBOX_SEALING_KEY_FILE_PREVIOUS", cfg.sealing_key_file_previous);
}

void read_log_level(setting_reader& r, config& cfg) {
  const auto level = r.text("OUTBOX_LOG_LEVEL", "");
  if (level.empty()) return;
  if (const auto parsed = parse_log_level(level)) {
    cfg.min_log_level = *parsed;
  } else {
    r.problem("OUTBOX_LOG_LEVEL", "must be debug, info, warn or error" + got(level, false));
  }
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

// host:port into `into`; empty resets it (off).
void read_listen_address(setting_reader& r, const char* name, std::optional<std::string>& into) {
  const raw_value* address = r.find(name);
  if (!address) return;
  if (address->value.empty()) {
    into.reset();
  } else if (valid_listen_address(address->value)) {
    into = address->value;
  } else {
    r.problem(name,
              "must be host:port or [ipv6]:port with a port from 1 to 65535, or empty to "
              "disable" +
                  got(address->value, false));
  }
}

void read_metrics_address(setting_reader& r, config& cfg) {
  read_listen_address(r, "OUTBOX_METRICS_ADDRESS", cfg.metrics_address);
}

void read_probe_address(setting_reader& r, config& cfg) {
  read_listen_address(r, "OUTBOX_PROBE_ADDRESS", cfg.probe_address);
  if (cfg.probe_address && cfg.metrics_address && *cfg.probe_address == *cfg.metrics_address)
    r.problem("OUTBOX_PROBE_ADDRESS", "must differ from OUTBOX_METRICS_ADDRESS" + got(*cfg.probe_address, false));
}

// ---- the table ----------------------------------------------------------------

using apply_fn = void (*)(config&, std::int64_t);
using read_fn = void (*)(setting_reader&, config&);
using show_fn = std::string (*)(const config&);

constexpr global_setting whole(std::string_view name, std::string_view fallback, std::int64_t min, std::int64_t max,
                               std::string_view meaning, apply_fn apply, show_fn show) {
  return {name, setting_kind::whole_number, fallback, {}, min, max, meaning, apply, nullptr, show};
}

constexpr global_setting other(std::string_view name, setting_kind kind, std::string_view fallback,
                               std::string_view meaning, read_fn read, show_fn show,
                               std::string_view documented_default = {}) {
  return {name, kind, fallback, documented_default, 0, 0, meaning, nullptr, read, show};
}

std::string n(std::int64_t v) { return std::to_string(v); }

// clang-format off
constexpr std::array table{
    other("DATABASE_URL", setting_kind::text, "", "the database (libpq URI or keyword string); empty: libpq's PG* variables",
          read_database_url, [](const config& c) { return redact_url(c.database_url); }),
    other("OUTBOX_INSTANCE_NAME", setting_kind::text, "", "prefix of the instance id in lease_owner and the attempts log",
          read_instance_name, [](const config& c) { return c.instance_name.value_or(""); }, "the host name"),
    other("OUTBOX_WAKE_MODE", setting_kind::choice, "listen", "listen (LISTEN plus the poll timer) or poll (timers only)",
          read_wake_mode, [](const config& c) { return std::string{c.wake == wake_mode::listen ? "listen" : "poll"}; }),
    whole("OUTBOX_POLL_INTERVAL_MS", "2000", 100, 60000, "longest idle wait between two claims",
          [](config& c, std::int64_t v) { c.poll_interval = milliseconds{v}; }, [](const config& c) { return n(c.poll_interval.count()); }),
    whole("OUTBOX_ADAPTIVE_LINGER_MS", "250", 1, 60000, "adaptive mode: stay awake this long after rows were last found",
          [](config& c, std::int64_t v) { c.adaptive_linger = milliseconds{v}; }, [](const config& c) { return n(c.adaptive_linger.count()); }),
    whole("OUTBOX_ADAPTIVE_POLL_MS", "20", 1, 1000, "adaptive mode: while awake, claim at least this often",
          [](config& c, std::int64_t v) { c.adaptive_poll = milliseconds{v}; }, [](const config& c) { return n(c.adaptive_poll.count()); }),
    whole("OUTBOX_ADAPTIVE_TTL_MS", "10000", 500, 600000, "adaptive mode: an awake mark lapses this long after its last refresh",
          [](config& c, std::int64_t v) { c.adaptive_ttl = milliseconds{v}; }, [](const config& c) { return n(c.adaptive_ttl.count()); }),
    whole("OUTBOX_ADAPTIVE_WAKE_RATE", "500", 1, 1000000, "adaptive mode: rows/s found by claims that make it go awake",
          [](config& c, std::int64_t v) { c.adaptive_wake_rate = static_cast<int>(v); }, [](const config& c) { return n(c.adaptive_wake_rate); }),
    whole("OUTBOX_CLAIM_BATCH", "100", 1, 1000, "most rows one claim statement takes",
          [](config& c, std::int64_t v) { c.claim_batch = static_cast<int>(v); }, [](const config& c) { return n(c.claim_batch); }),
    other("OUTBOX_CLAIM_SYNCHRONOUS_COMMIT", setting_kind::choice, "off", "on: a claim's commit waits for its WAL flush; off: a server crash may make a just-claimed row due again",
          read_claim_synchronous_commit, [](const config& c) { return std::string{c.claim_synchronous_commit ? "on" : "off"}; }),
    whole("OUTBOX_SETTLE_WINDOW_MS", "2", 0, 1000, "how long an outcome may wait for others to share its settle statement",
          [](config& c, std::int64_t v) { c.settle_window = milliseconds{v}; }, [](const config& c) { return n(c.settle_window.count()); }),
    whole("OUTBOX_MAX_IN_FLIGHT", "256", 1, 100000, "most rows in flight across all destinations",
          [](config& c, std::int64_t v) { c.max_in_flight = static_cast<int>(v); }, [](const config& c) { return n(c.max_in_flight); }),
    whole("OUTBOX_LEASE_SECONDS", "60", 1, 86400, "how long a claimed row belongs to this process (the crash-recovery time)",
          [](config& c, std::int64_t v) { c.lease = seconds{v}; }, [](const config& c) { return n(c.lease.count()); }),
    whole("OUTBOX_REQUEST_TIMEOUT_MS", "10000", 100, 600000, "deadline for one HTTP request, connect included",
          [](config& c, std::int64_t v) { c.request_timeout = milliseconds{v}; }, [](const config& c) { return n(c.request_timeout.count()); }),
    whole("OUTBOX_CONNECT_TIMEOUT_MS", "3000", 100, 600000, "budget for DNS plus TCP connect, and again for the TLS handshake",
          [](config& c, std::int64_t v) { c.connect_timeout = milliseconds{v}; }, [](const config& c) { return n(c.connect_timeout.count()); }),
    whole("OUTBOX_SWEEP_INTERVAL_SECONDS", "15", 1, 86400, "how often expired leases are reset and pauses re-read",
          [](config& c, std::int64_t v) { c.sweep_interval = seconds{v}; }, [](const config& c) { return n(c.sweep_interval.count()); }),
    whole("OUTBOX_STATUS_POLL_SECONDS", "60", 1, 86400, "how often the reconciler looks for requests due for a status check",
          [](config& c, std::int64_t v) { c.status_poll_interval = seconds{v}; }, [](const config& c) { return n(c.status_poll_interval.count()); }),
    whole("OUTBOX_SHUTDOWN_GRACE_SECONDS", "10", 0, 3600, "after SIGTERM, how long requests in flight may finish",
          [](config& c, std::int64_t v) { c.shutdown_grace = seconds{v}; }, [](const config& c) { return n(c.shutdown_grace.count()); }),
    whole("OUTBOX_LISTEN_HEARTBEAT_SECONDS", "10", 1, 3600, "quiet time after which the LISTEN connection is probed",
          [](config& c, std::int64_t v) { c.listen_heartbeat = seconds{v}; }, [](const config& c) { return n(c.listen_heartbeat.count()); }),
    whole("OUTBOX_BACKOFF_BASE_SECONDS", "2", 1, 86400, "delay after the first failed attempt; doubles after each further one",
          [](config& c, std::int64_t v) { c.backoff.base = seconds{v}; }, [](const config& c) { return n(c.backoff.base.count()); }),
    whole("OUTBOX_BACKOFF_CAP_SECONDS", "3600", 1, 7 * 86400, "largest delay before jitter",
          [](config& c, std::int64_t v) { c.backoff.cap = seconds{v}; }, [](const config& c) { return n(c.backoff.cap.count()); }),
    whole("OUTBOX_MAX_ATTEMPTS", "12", 1, 1000, "attempts in total, the first included",
          [](config& c, std::int64_t v) { c.backoff.max_attempts = static_cast<int>(v); }, [](const config& c) { return n(c.backoff.max_attempts); }),
    whole("OUTBOX_RETRY_HORIZON_HOURS", "36", 1, 24 * 365, "no retry later than created_at plus this",
          [](config& c, std::int64_t v) { c.backoff.retry_horizon = hours{v}; },
          [](const config& c) { return n(std::chrono::duration_cast<hours>(c.backoff.retry_horizon).count()); }),
    other("OUTBOX_EXTRA_CA_FILE", setting_kind::text, "", "PEM file of CA certificates trusted besides the system store",
          read_extra_ca_file, [](const config& c) { return c.extra_ca_file; }),
    other("OUTBOX_SEALING_KEY_FILE", setting_kind::text, "", "X25519 private key (PEM) that opens the registry's sealed secrets",
          read_sealing_key_files, [](const config& c) { return c.sealing_key_file; }),
    other("OUTBOX_SEALING_KEY_FILE_PREVIOUS", setting_kind::text, "", "during a key rotation: the key before, still accepted",
          read_previous_sealing_key_file, [](const config& c) { return c.sealing_key_file_previous; }),
    whole("OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS", "600", 0, 7 * 86400,
          "a row for a destination nobody configured waits this long for it, then is dead; 0: dead at once",
          [](config& c, std::int64_t v) { c.unknown_destination_grace = std::chrono::seconds{v}; },
          [](const config& c) { return n(c.unknown_destination_grace.count()); }),
    whole("OUTBOX_KEEP_PERSONAL_DATA_SENT_SECONDS", "86400", 0, 3650 * 86400,
          "a sent row's personal data is erased this long after it was sent; 0: never",
          [](config& c, std::int64_t v) { c.keep_personal_data_sent = std::chrono::seconds{v}; },
          [](const config& c) { return n(c.keep_personal_data_sent.count()); }),
    whole("OUTBOX_KEEP_PERSONAL_DATA_DEAD_SECONDS", "604800", 0, 3650 * 86400,
          "a dead or held row's personal data is erased this long after it became so; 0: never",
          [](config& c, std::int64_t v) { c.keep_personal_data_dead = std::chrono::seconds{v}; },
          [](const config& c) { return n(c.keep_personal_data_dead.count()); }),
    whole("OUTBOX_MAX_PAYLOAD_BYTES", "262144", 1, 64 * 1024 * 1024, "a larger payload makes the row dead without a request",
          [](config& c, std::int64_t v) { c.max_payload_bytes = static_cast<std::size_t>(v); }, [](const config& c) { return n(static_cast<std::int64_t>(c.max_payload_bytes)); }),
    other("OUTBOX_LOG_LEVEL", setting_kind::choice, "info", "lowest level written to stderr: debug, info, warn or error",
          read_log_level, [](const config& c) { return std::string{to_string(c.min_log_level)}; }),
    other("OUTBOX_METRICS_ADDRESS", setting_kind::text, "127.0.0.1:9464", "where run serves /metrics, /healthz and /readyz; empty: off",
          read_metrics_address, [](const config& c) { return c.metrics_address.value_or(""); }),
    other("OUTBOX_PROBE_ADDRESS", setting_kind::text, "", "a listener of its own for /healthz and /readyz (connection slots no flood of /metrics or /status can take); empty: the metrics listener answers them",
          read_probe_address, [](const config& c) { return c.probe_address.value_or(""); }),
};
// clang-format on

// The valid whole-number settings by name (defaults included); invalid ones are
// left out, so relations between settings are only checked between valid values.
using valid_numbers = std::map<std::string_view, std::int64_t>;

// Every setting of the table, in its order; whole numbers also into the result.
valid_numbers parse_table(setting_reader& r, config& cfg) {
  valid_numbers valid;
  for (const auto& s : table) {
    if (s.kind != setting_kind::whole_number) {
      s.read(r, cfg);
    } else if (const auto v = r.integer(s)) {
      s.apply(cfg, *v);
      valid.emplace(s.name, *v);
    }
  }
  return valid;
}

void check_retired(setting_reader& r, config& cfg) {
  for (const auto& s : retired_settings) {
    const raw_value* v = r.find(s.name);
    if (!v) continue;
    if (v->value.empty() || v->value == s.fixed_value) {
      cfg.warnings.push_back(v->origin + " is ignored: " + std::string{s.why});
    } else {
      r.problem(s.name, std::string{s.why} + got(v->value, false));
    }
  }
}

void check_relations(setting_reader& r, const valid_numbers& n, config& cfg) {
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

// The first destination whose provider fetches OAuth tokens, as "provider/name".
std::optional<std::string> first_oauth_destination(const config& cfg) {
  for (const auto& d : cfg.destinations) {
    const auto* kind = find_provider_kind(d.provider);
    if (kind != nullptr && kind->uses_oauth) return d.provider + "/" + d.name;
  }
  return std::nullopt;
}

}  // namespace

std::span<const global_setting> global_settings() { return table; }

const global_setting* find_global_setting(std::string_view name) {
  const auto it = std::find_if(table.begin(), table.end(), [&](const global_setting& s) { return s.name == name; });
  return it == table.end() ? nullptr : &*it;
}

const retired_setting* find_retired_setting(std::string_view name) {
  const auto it = std::find_if(retired_settings.begin(), retired_settings.end(),
                               [&](const retired_setting& s) { return s.name == name; });
  return it == retired_settings.end() ? nullptr : &*it;
}

std::string file_key(std::string_view name) {
  return ascii_lowercase(name.starts_with("OUTBOX_") ? name.substr(std::string_view{"OUTBOX_"}.size()) : name);
}

bool parse_globals(const raw_config& raw, config& cfg, std::vector<std::string>& problems) {
  setting_reader r{raw.globals, problems};
  check_retired(r, cfg);
  const valid_numbers numbers = parse_table(r, cfg);
  check_relations(r, numbers, cfg);
  return numbers.contains("OUTBOX_LEASE_SECONDS") && numbers.contains("OUTBOX_REQUEST_TIMEOUT_MS") &&
         numbers.contains("OUTBOX_CONNECT_TIMEOUT_MS");
}

void check_lease_budget(const raw_config& raw, const config& cfg, std::vector<std::string>& problems) {
  const auto oauth = first_oauth_destination(cfg);
  // The engine gives the TLS handshake the connect budget again (dispatcher/engine/http_options.hpp).
  const auto worst =
      worst_case_attempt(cfg.connect_timeout, cfg.connect_timeout, cfg.request_timeout, oauth.has_value());
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

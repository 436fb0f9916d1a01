#pragma once
// The dispatcher's whole runtime configuration, read once at start-up from the
// environment (container-friendly) and optionally a JSON file named by
// OUTBOX_CONFIG_FILE; the environment wins over the file. Everything is validated
// up front and every problem is reported at once (one line each, naming the
// setting) in a single config_error. Secrets never appear in errors or describe().
//
// Destinations: OUTBOX_DEST__<PROVIDER>__<DESTINATION>__<KEY>=value, names
// case-insensitive and stored lower-case, e.g.
//   OUTBOX_DEST__WEBHOOK__DEFAULT__URL=https://example.com/hook
//   OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET=whsec_...
//   OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_FOO=bar   (header "x-foo": '_' -> '-')
// Common keys: CONCURRENCY (16), RATE_PER_SECOND (0 = unlimited), BURST, PAUSED.
// In the file: {"poll_interval_ms": 500, "destinations": {"webhook": {"default":
//   {"url": "...", "headers": {"X-Foo": "bar"}}}}}; global keys are the variable
// names without OUTBOX_, lower-case ("database_url" for DATABASE_URL).
//
// An empty value in the environment means "use the default" for numbers, enums
// and booleans; for strings it means empty (OUTBOX_METRICS_ADDRESS= disables metrics).
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher/engine/backoff.hpp"
#include "dispatcher/ops/log.hpp"
#include "providers/http/http_types.hpp"

namespace outbox::providers {
class provider;
}

namespace outbox {

enum class wake_mode { listen, poll };

// The lease must outlive the worst-case attempt (dispatcher/engine/lease_budget.hpp) by
// at least this much, or a second dispatcher could claim and resend a row whose
// first request is still running.
inline constexpr std::chrono::seconds lease_margin{5};

struct destination_config {
  std::string provider;  // provider kind, lower-case: "webhook"
  std::string name;      // destination name, lower-case: "default"
  // Provider-specific settings by lower-case key ("url", "secret"), already
  // validated by that provider's validator.
  std::map<std::string, std::string> settings;
  providers::header_list extra_headers;  // names lower-case
  int concurrency = 16;                  // requests in flight to this destination at most
  double rate_per_second = 0;            // token bucket refill; 0 = unlimited
  int burst = 1;                         // bucket size; defaults to max(1, ceil(rate_per_second))
  bool paused = false;                   // configured paused: claim nothing for it
  // Pause when 4xx answers exceed this share of the last 500 requests (client_error_window.hpp);
  // 0: never. Default: the provider kind's (provider_kind::default_max_4xx_share).
  double max_4xx_share = 0;

  [[nodiscard]] std::string_view setting(std::string_view key) const;  // "" when absent
};

struct config {
  std::string database_url;                  // empty: libpq's PG* environment variables
  std::optional<std::string> instance_name;  // empty: the engine uses hostname-pid
  wake_mode wake = wake_mode::listen;
  std::string notify_channel = "outbox_event_delivery";
  std::chrono::milliseconds poll_interval{2000};
  // Adaptive wake mode (sql/0003_wake_modes.sql, dispatcher/engine/adaptive_wake.hpp).
  std::chrono::milliseconds adaptive_linger{250};  // stay awake this long after rows were last found
  std::chrono::milliseconds adaptive_poll{20};     // while awake, claim at least this often
  std::chrono::milliseconds adaptive_ttl{10000};   // an awake mark lapses this long after its last refresh
  int adaptive_wake_rate = 500;                    // rows/s found by claims that make it go awake
  int claim_batch = 100;
  // Whether a claim's commit waits for its WAL flush. Off: a claim lost in a
  // server crash only makes its rows claimable again (resent under the same key).
  bool claim_synchronous_commit = false;
  int max_in_flight = 256;  // rows in flight across all destinations
  // Outcomes wait up to this long to share one settle statement (0: flush at once).
  std::chrono::milliseconds settle_window{2};
  // 60 s covers the worst case of the default timeouts, an OAuth token fetch
  // included: 3 x (3 s connect + 3 s handshake + 10 s request) + 5 s = 53 s.
  std::chrono::seconds lease{60};
  std::chrono::milliseconds request_timeout{10000};  // whole request, connect included
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::seconds sweep_interval{15};
  // How often the reconciler looks for accepted requests due for a status check
  // (providers that process asynchronously: Google Data Manager).
  std::chrono::seconds status_poll_interval{60};
  std::chrono::seconds shutdown_grace{10};
  std::chrono::seconds listen_heartbeat{10};
  backoff_policy backoff;
  std::string extra_ca_file;  // empty: system trust store only
  // The private key that opens the registry's sealed secrets (dispatcher/secrets/sealing_keyring.hpp),
  // and during a rotation the one before it. Empty: none (the registry's secrets cannot be opened).
  std::string sealing_key_file;
  std::string sealing_key_file_previous;
  std::size_t max_payload_bytes = 262144;
  // A row naming a destination nobody configured waits this long (pending, with
  // the reason) for it to appear in the registry before it is dead; 0: dead at once.
  std::chrono::seconds unknown_destination_grace{600};
  // Personal data of final rows is erased this long after they became final
  // (docs/personal_data.md); 0: kept. A day for sent rows (their data serves
  // nothing once sent; a day lets on-call check a platform's complaint), a
  // week for dead and held rows (on-call may requeue them; Meta and TikTok take
  // no event older than 7 days anyway).
  std::chrono::seconds keep_personal_data_sent{86400};
  std::chrono::seconds keep_personal_data_dead{7 * 86400};
  log_level min_log_level = log_level::info;
  std::optional<std::string> metrics_address = "127.0.0.1:9464";  // nullopt: disabled
  // A listener of its own for /healthz and /readyz only (nullopt: the probes are
  // answered by the metrics listener): its connection slots are the probes' alone.
  std::optional<std::string> probe_address;
  std::vector<destination_config> destinations;  // sorted by provider, then name
  std::vector<std::string> warnings;             // valid but questionable choices, for the start-up log

  [[nodiscard]] const destination_config* find_destination(std::string_view provider, std::string_view name) const;
};

// All start-up configuration problems at once; what() lists them one per line.
class config_error : public std::runtime_error {
 public:
  explicit config_error(std::vector<std::string> problems);
  [[nodiscard]] const std::vector<std::string>& problems() const noexcept { return problems_; }

 private:
  std::vector<std::string> problems_;
};

using environment = std::map<std::string, std::string, std::less<>>;

// The process environment (environ) as a map.
[[nodiscard]] environment process_environment();

// Parses and validates; throws config_error listing every problem.
[[nodiscard]] config load_config(const environment& env);

// The effective configuration as NAME=value lines (the environment form), secrets
// shown as "***": secret settings and headers, the password in DATABASE_URL, and
// in other URLs the userinfo, every query value and secret-looking path segments
// (mask_url_secrets() in config_describe.hpp). For `dispatcher config`.
[[nodiscard]] std::string describe(const config& cfg);

// A destination from the registry in the database (docs/destinations.md): its
// keys in the environment's form, lower-case ("url", "concurrency",
// "header__x-foo"), checked by the same code as OUTBOX_DEST__ variables. Each
// problem is (key, message); the key is empty for one about the whole entry.
struct destination_check {
  std::optional<destination_config> destination;  // nullopt when there is a problem
  std::vector<std::pair<std::string, std::string>> problems;
};
[[nodiscard]] destination_check check_destination(const std::string& provider, const std::string& name,
                                                  const std::map<std::string, std::string>& keys);
// Keys whose values are secrets: stored sealed in the registry, never given on
// a command line, masked everywhere they are shown. Provider settings by name;
// headers whose name looks secret ("header__authorization", "header__x-api-key").
[[nodiscard]] bool is_secret_setting(std::string_view key);
inline constexpr std::string_view header_key_prefix = "header__";

// One provider kind the configuration accepts. To add one (meta, tiktok...), add
// an entry in config_destinations.cpp pointing at the provider's own key list and validator.
struct provider_kind {
  std::string_view kind;
  std::span<const std::string_view> setting_keys;  // provider-specific keys, lower-case
  // (key, problem) pairs; must never echo secret values.
  std::vector<std::pair<std::string, std::string>> (*validate)(const std::map<std::string, std::string>&);
  // Builds the provider for a destination whose settings passed `validate`.
  std::unique_ptr<providers::provider> (*make)(const destination_config&);
  bool uses_oauth = false;  // fetches an OAuth token before its requests: a longer lease (lease_budget.hpp)
  // Normalizes and hashes user data: `run` loads the user data module for it
  // (providers/user_data/user_data_module.hpp).
  bool hashes_user_data = true;
  // MAX_4XX_SHARE unless configured: 0.10 for Meta, whose access tier needs an app
  // error share below 15 %; 0 (off) where 4xx only means a bad row.
  double default_max_4xx_share = 0;
};

[[nodiscard]] std::span<const provider_kind> provider_kinds();
// The provider of a destination; throws std::invalid_argument for an unknown kind.
[[nodiscard]] std::unique_ptr<providers::provider> make_provider(const destination_config& cfg);
// "webhook, meta, tiktok, google_ads, google_data_manager", for messages.
[[nodiscard]] std::string known_provider_names();
[[nodiscard]] bool is_known_provider(std::string_view name);
// The registry's entry for `name`; nullptr when it is not a provider kind.
[[nodiscard]] const provider_kind* find_provider_kind(std::string_view name);

}  // namespace outbox

// Destinations: the provider registry, common keys (concurrency, rate, burst,
// paused, max_4xx_share), extra headers, and each provider's own validator.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "dispatcher/config/config_parts.hpp"
#include "dispatcher/ops/log.hpp"
#include "providers/google/google_ads_provider.hpp"
#include "providers/google/google_data_manager_provider.hpp"
#include "providers/meta/meta_provider.hpp"
#include "providers/tiktok/tiktok_provider.hpp"
#include "providers/webhook/webhook_provider.hpp"

namespace outbox {
namespace {

// Add new provider kinds here (their validators live next to the provider).
// The last fields say whether its requests need an OAuth token first (lease
// budget), whether it hashes user data (the user data module) and its MAX_4XX_SHARE.
std::unique_ptr<providers::provider> make_webhook(const destination_config& d) {
  return std::make_unique<providers::webhook_provider>(
      providers::make_webhook_destination(d.settings, d.extra_headers));
}
std::unique_ptr<providers::provider> make_meta(const destination_config& d) {
  return std::make_unique<providers::meta_provider>(providers::make_meta_destination(d.settings));
}
std::unique_ptr<providers::provider> make_tiktok(const destination_config& d) {
  return std::make_unique<providers::tiktok_provider>(providers::make_tiktok_destination(d.settings));
}
std::unique_ptr<providers::provider> make_google_ads(const destination_config& d) {
  return std::make_unique<providers::google_ads_provider>(
      providers::make_google_ads_destination(d.settings, d.extra_headers));
}
std::unique_ptr<providers::provider> make_google_data_manager(const destination_config& d) {
  return std::make_unique<providers::google_data_manager_provider>(
      providers::make_google_data_manager_destination(d.settings, d.extra_headers));
}

constexpr std::array<provider_kind, 5> registry{{
    {"webhook", providers::webhook_setting_keys, &providers::validate_webhook_settings, &make_webhook, false, false},
    {"meta", providers::meta_setting_keys, &providers::validate_meta_settings, &make_meta, false, true, 0.10},
    {"tiktok", providers::tiktok_setting_keys, &providers::validate_tiktok_settings, &make_tiktok, false, true},
    {"google_ads", providers::google_ads_setting_keys, &providers::validate_google_ads_settings, &make_google_ads, true,
     true},
    {"google_data_manager", providers::google_data_manager_setting_keys,
     &providers::validate_google_data_manager_settings, &make_google_data_manager, true, true},
}};

}  // namespace

std::span<const provider_kind> provider_kinds() { return registry; }

std::unique_ptr<providers::provider> make_provider(const destination_config& cfg) {
  if (const auto* kind = find_provider_kind(cfg.provider)) return kind->make(cfg);
  throw std::invalid_argument("unknown provider kind '" + cfg.provider + "'");
}

std::string known_provider_names() {
  std::string out;
  for (const auto& k : provider_kinds()) out += (out.empty() ? "" : ", ") + std::string(k.kind);
  return out;
}

const provider_kind* find_provider_kind(std::string_view name) {
  const auto it =
      std::find_if(registry.begin(), registry.end(), [&](const provider_kind& k) { return k.kind == name; });
  return it == registry.end() ? nullptr : &*it;
}

bool is_known_provider(std::string_view name) { return find_provider_kind(name) != nullptr; }

namespace config_detail {
namespace {

constexpr std::array<std::string_view, 5> common_dest_keys{"concurrency", "rate_per_second", "burst", "paused",
                                                           "max_4xx_share"};

// Framing and hop-by-hop headers belong to the HTTP client, not to configuration.
constexpr std::array<std::string_view, 9> reserved_headers{"host",       "content-length", "transfer-encoding",
                                                           "connection", "keep-alive",     "te",
                                                           "trailer",    "upgrade",        "proxy-connection"};

bool valid_name(std::string_view name) {
  return !name.empty() && name.front() != '_' && name.back() != '_' &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view{"!#$%&'*+-.^_`|~"}.find(c) != std::string_view::npos;
}

void parse_rate(const raw_value& v, destination_config& d, std::vector<std::string>& problems) {
  double rate = 0;
  const auto [end, ec] = std::from_chars(v.value.data(), v.value.data() + v.value.size(), rate);
  if (ec != std::errc{} || end != v.value.data() + v.value.size() || !std::isfinite(rate) || rate < 0 || rate > 1e6) {
    problems.push_back(v.origin + ": must be a number from 0 (unlimited) to 1000000" + got(v.value, false));
  } else {
    d.rate_per_second = rate;
  }
}

void parse_share(const raw_value& v, destination_config& d, std::vector<std::string>& problems) {
  double share = 0;
  const auto [end, ec] = std::from_chars(v.value.data(), v.value.data() + v.value.size(), share);
  if (ec != std::errc{} || end != v.value.data() + v.value.size() || !std::isfinite(share) || share < 0 || share > 1) {
    problems.push_back(v.origin + ": must be a share from 0 (never pause) to 1, e.g. 0.10" + got(v.value, false));
  } else {
    d.max_4xx_share = share;
  }
}

void parse_common_setting(const std::string& key, const raw_value& v, destination_config& d, bool& burst_set,
                          std::vector<std::string>& problems) {
  if (v.value.empty()) return;  // keep the default
  if (key == "concurrency") {
    if (const auto n = parse_integer(v.value, 1, 1024, v.origin, false, problems)) d.concurrency = static_cast<int>(*n);
  } else if (key == "burst") {
    if (const auto n = parse_integer(v.value, 1, 1000000, v.origin, false, problems)) {
      d.burst = static_cast<int>(*n);
      burst_set = true;
    }
  } else if (key == "rate_per_second") {
    parse_rate(v, d, problems);
  } else if (key == "max_4xx_share") {
    parse_share(v, d, problems);
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

void parse_settings(const raw_destination& rd, const provider_kind& kind, destination_config& d,
                    std::vector<std::string>& problems) {
  bool burst_set = false;
  for (const auto& [key, v] : rd.settings) {
    if (contains(common_dest_keys, key)) {
      parse_common_setting(key, v, d, burst_set, problems);
    } else if (std::find(kind.setting_keys.begin(), kind.setting_keys.end(), key) != kind.setting_keys.end()) {
      d.settings[key] = v.value;
    } else {
      std::vector<std::string_view> known{kind.setting_keys.begin(), kind.setting_keys.end()};
      known.insert(known.end(), common_dest_keys.begin(), common_dest_keys.end());
      known.push_back("header__<name>");
      problems.push_back(v.origin + ": unknown setting \"" + key + "\" for a " + d.provider +
                         " destination (known: " + join(known, ", ") + ")" + suggestion(key, known));
    }
  }
  if (!burst_set) d.burst = std::max(1, static_cast<int>(std::ceil(d.rate_per_second)));
}

}  // namespace

// nullopt (and a problem) when the names or the provider are unusable.
std::optional<destination_config> parse_destination(const std::string& provider, const std::string& name,
                                                    const raw_destination& rd, std::vector<std::string>& problems) {
  if (!valid_name(provider) || !valid_name(name)) {
    problems.push_back(rd.origin + ": provider and destination names may only contain a-z, 0-9 and inner _");
    return std::nullopt;
  }
  const provider_kind* kind = find_provider_kind(provider);
  if (kind == nullptr) {
    std::vector<std::string_view> known;
    for (const auto& k : registry) known.push_back(k.kind);
    problems.push_back(rd.origin + ": unknown provider \"" + provider + "\" (known: " + join(known, ", ") + ")");
    return std::nullopt;
  }
  destination_config d;
  d.provider = provider;
  d.name = name;
  d.max_4xx_share = kind->default_max_4xx_share;
  parse_settings(rd, *kind, d, problems);
  parse_headers(rd, d, problems);
  for (const auto& [key, message] : kind->validate(d.settings)) {
    const auto it = rd.settings.find(key);
    problems.push_back((it != rd.settings.end() ? it->second.origin : dest_var(provider, name, key)) + ": " + message);
  }
  return d;
}

void parse_destinations(const raw_config& raw, config& cfg, std::vector<std::string>& problems) {
  for (const auto& [id, rd] : raw.destinations) {
    if (auto d = parse_destination(id.first, id.second, rd, problems)) cfg.destinations.push_back(std::move(*d));
  }
  if (cfg.destinations.empty()) {
    // Appended: GCC 12 at -O3 prints a false -Warray-bounds on `"..." + std::string{...} + "..."`.
    cfg.warnings.push_back(
        std::string("no destinations configured (").append(dest_pattern).append("): nothing can be delivered"));
  }
}

}  // namespace config_detail
}  // namespace outbox

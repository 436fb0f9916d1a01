// check_destination() and is_secret_setting(): the registry's entries go
// through the environment's parser (config_destinations.cpp), so a key valid
// in one place is valid in the other.
#include <algorithm>
#include <array>

#include "dispatcher/config/config_parts.hpp"
#include "dispatcher/ops/log.hpp"

namespace outbox {

namespace {

// What a provider's settings call their secrets (config_describe.cpp masks by
// the log's rule, which also catches "token_url": a URL, not a secret).
constexpr std::array<std::string_view, 6> secret_settings{"secret",        "access_token",  "app_secret",
                                                          "client_secret", "refresh_token", "developer_token"};

}  // namespace

bool is_secret_setting(std::string_view key) {
  if (key.starts_with(header_key_prefix)) return is_secret_key(key.substr(header_key_prefix.size()));
  return std::find(secret_settings.begin(), secret_settings.end(), key) != secret_settings.end();
}

destination_check check_destination(const std::string& provider, const std::string& name,
                                    const std::map<std::string, std::string>& keys) {
  config_detail::raw_destination raw;
  raw.origin = provider + "/" + name;
  for (const auto& [key, value] : keys) {
    // Each value is named by its key, so a problem can be traced back to it.
    if (key.starts_with(header_key_prefix)) {
      std::string header = key.substr(header_key_prefix.size());
      std::replace(header.begin(), header.end(), '_', '-');
      raw.headers[header] = {value, key};
    } else {
      raw.settings[key] = {value, key};
    }
  }
  std::vector<std::string> problems;
  auto parsed = config_detail::parse_destination(provider, name, raw, problems);
  destination_check out;
  for (auto& p : problems) {
    // "<origin>: <message>"; the origin is a key, or provider/name for the entry.
    const auto colon = p.find(": ");
    std::string origin = colon == std::string::npos ? std::string{} : p.substr(0, colon);
    std::string message = colon == std::string::npos ? p : p.substr(colon + 2);
    if (origin == raw.origin) origin.clear();
    // A required key that is missing is named as its variable: OUTBOX_DEST__META__P__ACCESS_TOKEN.
    if (origin.starts_with(config_detail::dest_prefix))
      origin = providers::ascii_lowercase(origin.substr(origin.rfind("__") + 2));
    out.problems.emplace_back(std::move(origin), std::move(message));
  }
  if (out.problems.empty()) out.destination = std::move(parsed);
  return out;
}

}  // namespace outbox

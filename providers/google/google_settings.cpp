#include "providers/google/google_settings.hpp"

#include <algorithm>
#include <array>

#include "providers/google/google_text.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/setting_checks.hpp"

namespace outbox::providers {

using setting_checks::setting;

namespace google_settings {

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::string> customer_id(std::string_view text) {
  std::string digits;
  for (const char c : trim_blanks(text)) {
    if (c == '-') continue;
    if (c < '0' || c > '9') return std::nullopt;
    digits += c;
  }
  if (digits.size() != 10) return std::nullopt;
  return digits;
}

std::optional<std::string> base_url(std::string_view text) {
  std::string_view url = trim_blanks(text);
  std::size_t scheme = 0;
  if (url.size() >= 8 && iequals(url.substr(0, 8), "https://")) {
    scheme = 8;
  } else if (url.size() >= 7 && iequals(url.substr(0, 7), "http://")) {
    scheme = 7;
  } else {
    return std::nullopt;
  }
  while (url.size() > scheme && url.back() == '/') url.remove_suffix(1);
  const std::string_view rest = url.substr(scheme);
  if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#') return std::nullopt;
  const bool bad = std::any_of(url.begin(), url.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b <= 0x20 || b == 0x7f || c == '?' || c == '#';
  });
  if (bad) return std::nullopt;
  return std::string{url};
}

void check_accounts(const settings_map& settings, const account_keys& keys, problem_list& problems) {
  const auto account = setting(settings, keys.account);
  if (trim_blanks(account).empty()) {
    problems.emplace_back(keys.account, std::string{"is required ("} + keys.account_help + ")");
  } else if (!customer_id(account)) {
    problems.emplace_back(keys.account, "must be a 10-digit Google Ads customer id such as 123-456-7890 (got \"" +
                                            one_line_excerpt(account, 40) + "\")");
  }
  const auto action = trim_blanks(setting(settings, "conversion_action_id"));
  if (action.empty()) {
    problems.emplace_back("conversion_action_id", "is required (the id of an UPLOAD_CLICKS conversion action)");
  } else if (!is_digits(action) || action.size() > 20) {
    problems.emplace_back("conversion_action_id",
                          "must be the numeric conversion action id (got \"" + one_line_excerpt(action, 40) + "\")");
  }
  if (const auto login = setting(settings, keys.login); !trim_blanks(login).empty() && !customer_id(login)) {
    problems.emplace_back(keys.login, "must be a 10-digit manager account id such as 123-456-7890 (got \"" +
                                          one_line_excerpt(login, 40) + "\")");
  }
  if (const auto url = setting(settings, "base_url"); !url.empty() && !base_url(url)) {
    problems.emplace_back("base_url", "must be an https:// (or http://) URL with a host and no query");
  }
}

void check_common(const settings_map& settings, std::size_t max_batch, problem_list& problems) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> oauth_keys{{
      {"client_id", "is required (the OAuth2 client id of the Google Cloud project)"},
      {"client_secret", "is required (the secret of that OAuth2 client)"},
      {"refresh_token", "is required (a refresh token the Google user granted that client, with offline access)"},
  }};
  for (const auto& [key, message] : oauth_keys) {
    if (trim_blanks(setting(settings, key)).empty()) problems.emplace_back(std::string{key}, std::string{message});
  }
  if (const auto url = setting(settings, "token_url"); !url.empty() && !base_url(url)) {
    problems.emplace_back("token_url", "must be an https:// (or http://) URL with a host");
  }
  if (const auto v = setting(settings, "validate_only"); !v.empty() && !parse_bool(trim_blanks(v))) {
    problems.emplace_back("validate_only", "must be true or false (got \"" + one_line_excerpt(v, 40) + "\")");
  }
  if (const auto v = trim_blanks(setting(settings, "batch_size")); !v.empty()) {
    const bool ok =
        is_digits(v) && v.size() <= 6 && std::stoul(std::string{v}) >= 1 && std::stoul(std::string{v}) <= max_batch;
    if (!ok) {
      problems.emplace_back("batch_size", "must be a whole number from 1 to " + std::to_string(max_batch) + " (got \"" +
                                              one_line_excerpt(v, 40) + "\")");
    }
  }
  if (auto v = trim_blanks(setting(settings, "default_phone_country_code")); !v.empty()) {
    if (v.front() == '+') v.remove_prefix(1);
    if (!is_digits(v) || v.size() > 3 || v.front() == '0') {
      problems.emplace_back("default_phone_country_code",
                            "must be a calling code of 1 to 3 digits such as 1, 44 or +49 (got \"" +
                                one_line_excerpt(setting(settings, "default_phone_country_code"), 40) + "\")");
    }
  }
}

oauth_settings oauth_from(const settings_map& settings) {
  oauth_settings o;
  if (const auto url = setting(settings, "token_url"); !url.empty()) {
    if (const auto u = base_url(url)) o.token_url = *u;
  }
  o.client_id = std::string{trim_blanks(setting(settings, "client_id"))};
  o.client_secret = std::string{setting(settings, "client_secret")};
  o.refresh_token = std::string{setting(settings, "refresh_token")};
  return o;
}

}  // namespace google_settings

}  // namespace outbox::providers

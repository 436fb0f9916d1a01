// Settings of a `google_data_manager` destination: validation and the destination they make.
#include <stdexcept>

#include "providers/google/google_data_manager_provider.hpp"
#include "providers/google/google_settings.hpp"
#include "providers/google/google_text.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/setting_checks.hpp"

namespace outbox::providers {
using setting_checks::setting;

std::vector<std::pair<std::string, std::string>> validate_google_data_manager_settings(
    const std::map<std::string, std::string>& settings) {
  using namespace google_settings;
  problem_list problems;
  check_accounts(settings,
                 {"account_id", "the Google Ads conversion account, 10 digits, dashes allowed", "login_account_id"},
                 problems);
  check_common(settings, google_data_manager_max_batch, problems);
  if (const auto delay = trim_blanks(setting(settings, "status_check_delay_seconds"));
      !delay.empty() && (!is_digits(delay) || delay.size() > 6 || std::stoul(std::string{delay}) < 1 ||
                         std::stoul(std::string{delay}) > 86400)) {
    problems.emplace_back("status_check_delay_seconds", "must be a whole number of seconds from 1 to 86400 (got \"" +
                                                            one_line_excerpt(delay, 40) + "\")");
  }
  return problems;
}

google_data_manager_destination make_google_data_manager_destination(const std::map<std::string, std::string>& settings,
                                                                     header_list extra_headers) {
  using namespace google_settings;
  if (!validate_google_data_manager_settings(settings).empty()) {
    throw std::invalid_argument("google_data_manager settings are not valid (run `dispatcher config`)");
  }
  google_data_manager_destination d;
  if (const auto url = setting(settings, "base_url"); !url.empty()) d.base_url = *base_url(url);
  d.account_id = *customer_id(setting(settings, "account_id"));
  d.conversion_action_id = std::string{trim_blanks(setting(settings, "conversion_action_id"))};
  if (const auto login = setting(settings, "login_account_id"); !trim_blanks(login).empty()) {
    d.login_account_id = *customer_id(login);
  }
  d.oauth = oauth_from(settings);
  if (const auto v = setting(settings, "validate_only"); !v.empty()) d.validate_only = *parse_bool(trim_blanks(v));
  if (const auto v = trim_blanks(setting(settings, "batch_size")); !v.empty())
    d.batch_size = std::stoul(std::string{v});
  auto code = trim_blanks(setting(settings, "default_phone_country_code"));
  if (!code.empty() && code.front() == '+') code.remove_prefix(1);
  d.default_phone_country_code = std::string{code};
  if (const auto v = trim_blanks(setting(settings, "status_check_delay_seconds")); !v.empty()) {
    d.status_check_delay = std::chrono::seconds{std::stol(std::string{v})};
  }
  d.extra_headers = std::move(extra_headers);
  return d;
}

}  // namespace outbox::providers

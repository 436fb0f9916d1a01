#pragma once
// Settings helpers shared by both Google providers' validators and factories:
// ids, booleans, base URLs, and the OAuth and batching keys both accept.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "providers/provider.hpp"

namespace outbox::providers {

namespace google_settings {
using settings_map = std::map<std::string, std::string>;
using problem_list = std::vector<std::pair<std::string, std::string>>;
// "123-456-7890" -> "1234567890"; nullopt unless 10 digits once dashes are gone.
[[nodiscard]] std::optional<std::string> customer_id(std::string_view text);
[[nodiscard]] bool is_digits(std::string_view text);
// https:// or http:// with a host; a trailing '/' is dropped. nullopt when unusable.
[[nodiscard]] std::optional<std::string> base_url(std::string_view text);
// The account that owns the conversion action (required), conversion_action_id,
// an optional manager account and base_url; the key names differ per API.
struct account_keys {
  const char* account;       // "customer_id" / "account_id"
  const char* account_help;  // what it is, for the "is required" problem
  const char* login;         // "login_customer_id" / "login_account_id"
};
void check_accounts(const settings_map& settings, const account_keys& keys, problem_list& problems);
// The OAuth keys (client_id, client_secret, refresh_token, token_url), the
// validate_only flag, batch_size (1..max) and default_phone_country_code.
void check_common(const settings_map& settings, std::size_t max_batch, problem_list& problems);
[[nodiscard]] oauth_settings oauth_from(const settings_map& settings);
}  // namespace google_settings

}  // namespace outbox::providers

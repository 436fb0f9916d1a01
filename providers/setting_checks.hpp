#pragma once
// Small checks shared by the providers' destination-settings validators, so
// every provider words the same problem the same way.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace outbox::providers::setting_checks {

using settings_map = std::map<std::string, std::string>;

// The value of `key`, "" when absent.
[[nodiscard]] std::string_view setting(const settings_map& settings, std::string_view key);
[[nodiscard]] bool all_digits(std::string_view s);
[[nodiscard]] bool has_blank_or_control(std::string_view s);
[[nodiscard]] bool has_control(std::string_view s);
// " (got \"<value>\")", cut at 60 bytes with control characters replaced; never use for secrets.
[[nodiscard]] std::string got(std::string_view value);
[[nodiscard]] std::optional<std::size_t> parse_size(std::string_view s, std::size_t min, std::size_t max);
// "" when fine, else the problem with a base URL: scheme, host, no query or fragment.
[[nodiscard]] std::string base_url_problem(std::string_view url);
[[nodiscard]] std::string strip_trailing_slashes(std::string_view url);
// "" when `code` is a country calling code of 1 to 3 digits (an optional leading '+').
[[nodiscard]] std::string calling_code_problem(std::string_view code);
// The code without its '+'.
[[nodiscard]] std::string calling_code(std::string_view code);

}  // namespace outbox::providers::setting_checks

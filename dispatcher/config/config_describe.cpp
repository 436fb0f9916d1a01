// `dispatcher config`: the effective configuration in environment form, with
// every secret masked.
#include "dispatcher/config/config_describe.hpp"

#include <charconv>

#include "dispatcher/config/config_parts.hpp"
#include "dispatcher/ops/log.hpp"
#include "providers/text.hpp"

namespace outbox {
namespace {

using config_detail::ascii_lowercase;

constexpr std::string_view masked = "***";

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The longest run of characters for which `in_run` holds, and whether one such
// run of at least `min_mixed` characters mixes letters and digits.
struct runs {
  std::size_t longest = 0;
  bool long_and_mixed = false;
};

template <typename Pred>
runs scan_runs(std::string_view s, Pred in_run, std::size_t min_mixed) {
  runs out;
  std::size_t length = 0;
  bool letters = false;
  bool digits = false;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && in_run(s[i])) {
      ++length;
      letters = letters || is_letter(s[i]);
      digits = digits || providers::is_ascii_digit(s[i]);
      continue;
    }
    out.longest = std::max(out.longest, length);
    out.long_and_mixed = out.long_and_mixed || (length >= min_mixed && letters && digits);
    length = 0;
    letters = digits = false;
  }
  return out;
}

bool names_a_secret(std::string_view segment) {
  static constexpr std::array<std::string_view, 6> markers{"secret",     "token",     "passw",
                                                           "credential", "signature", "apikey"};
  std::string s = ascii_lowercase(segment);
  std::erase_if(s, [](char c) { return c == '_' || c == '-'; });  // api_key, api-key
  for (const auto marker : markers) {
    if (s.find(marker) == std::string::npos) continue;
    const bool just_the_word = s == marker || s == std::string{marker} + "s";
    if (!just_the_word) return true;
  }
  return false;
}

bool looks_secret(std::string_view segment) {
  // Generated tokens are base64url, hex or UUIDs: one run of [A-Za-z0-9_-].
  const auto token_char = [](char c) { return is_letter(c) || providers::is_ascii_digit(c) || c == '_' || c == '-'; };
  const auto alnum = [](char c) { return is_letter(c) || providers::is_ascii_digit(c); };
  return scan_runs(segment, token_char, 16).long_and_mixed || scan_runs(segment, alnum, 32).longest >= 32 ||
         names_a_secret(segment);
}

std::string mask_path(std::string_view path) {
  std::string out;
  bool first = true;
  for (const auto segment : config_detail::split(path, "/")) {
    if (!first) out.push_back('/');
    first = false;
    out.append(looks_secret(segment) ? masked : segment);
  }
  return out;
}

std::string mask_query(std::string_view query) {
  std::string out;
  for (const auto part : config_detail::split(query, "&")) {
    if (!out.empty()) out.push_back('&');
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      out.append(looks_secret(part) ? masked : part);
    } else {
      out.append(part.substr(0, eq + 1)).append(eq + 1 < part.size() ? masked : "");
    }
  }
  return out;
}

std::string format_number(double value) {
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  return ec == std::errc{} ? std::string(buf.data(), end) : std::string{"?"};
}

std::string shown(std::string_view key, std::string_view value) {
  if (value.empty()) return {};
  return is_secret_key(key) ? std::string{masked} : mask_url_secrets(value);
}

using line_fn = std::function<void(std::string_view, std::string_view)>;

void describe_globals(const config& cfg, const line_fn& line) {
  for (const auto& setting : config_detail::global_settings()) line(setting.name, setting.show(cfg));
}

void describe_destination(const destination_config& d, const line_fn& line) {
  using config_detail::dest_var;
  for (const auto& [key, value] : d.settings) line(dest_var(d.provider, d.name, key), shown(key, value));
  line(dest_var(d.provider, d.name, "concurrency"), std::to_string(d.concurrency));
  line(dest_var(d.provider, d.name, "rate_per_second"), format_number(d.rate_per_second));
  line(dest_var(d.provider, d.name, "burst"), std::to_string(d.burst));
  line(dest_var(d.provider, d.name, "paused"), d.paused ? "true" : "false");
  line(dest_var(d.provider, d.name, "max_4xx_share"), format_number(d.max_4xx_share));
  for (const auto& [header, value] : d.extra_headers) {
    line(config_detail::header_var(d.provider, d.name, header), shown(header, value));
  }
}

}  // namespace

std::string mask_url_secrets(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return redact_url(url);
  std::string out{url.substr(0, scheme_end + 3)};
  std::string_view rest = url.substr(scheme_end + 3);
  const std::size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  const std::string_view authority = rest.substr(0, authority_end);
  const std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) {
    out.append(authority);
  } else {
    out.append(masked).append(authority.substr(at));  // "***@host:port"
  }
  rest.remove_prefix(authority_end);

  const std::size_t hash = rest.find('#');
  const std::string_view fragment = hash == std::string_view::npos ? std::string_view{} : rest.substr(hash + 1);
  rest = rest.substr(0, hash);
  const std::size_t question = rest.find('?');
  out.append(mask_path(rest.substr(0, question)));
  if (question != std::string_view::npos) out.append("?").append(mask_query(rest.substr(question + 1)));
  if (hash != std::string_view::npos) out.append("#").append(fragment.empty() ? "" : masked);
  return out;
}

std::string describe(const config& cfg) {
  std::string out = "# effective configuration (secrets shown as ***)\n";
  const line_fn line = [&](std::string_view name, std::string_view value) {
    out.append(name).append("=").append(value).append("\n");
  };
  describe_globals(cfg, line);
  for (const auto& d : cfg.destinations) describe_destination(d, line);
  for (const auto& warning : cfg.warnings) out.append("# warning: ").append(warning).append("\n");
  return out;
}

}  // namespace outbox

#include "dispatcher/ops/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>

#include "providers/text.hpp"

namespace outbox {
namespace {

using nlohmann::json;

constexpr std::string_view masked = "***";

std::string normalized_key(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (const char c : key) out.push_back(c == '-' ? '_' : providers::ascii_lower(c));
  return out;
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Masks the value of every `name=value` whose name looks secret: covers URL query
// parameters (?access_token=...) and libpq conninfo (password=... or password='a b').
std::string mask_secret_assignments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    out.push_back(s[i]);
    if (s[i] != '=') {
      ++i;
      continue;
    }
    std::size_t name_end = i;
    while (name_end > 0 && s[name_end - 1] == ' ') --name_end;
    std::size_t name_begin = name_end;
    while (name_begin > 0 && is_word_char(s[name_begin - 1])) --name_begin;
    ++i;
    if (name_begin == name_end || !is_secret_key(s.substr(name_begin, name_end - name_begin))) continue;
    while (i < s.size() && s[i] == ' ') out.push_back(s[i++]);
    if (i < s.size() && s[i] == '\'') {  // conninfo quoted value, backslash escapes
      ++i;
      while (i < s.size() && s[i] != '\'') i += (s[i] == '\\' && i + 1 < s.size()) ? 2 : 1;
      if (i < s.size()) ++i;
    } else {
      while (i < s.size() && !is_space(s[i]) && s[i] != '&' && s[i] != '#') ++i;
    }
    out.append(masked);
  }
  return out;
}

// Masks the password of every "scheme://user:password@host".
std::string mask_userinfo_passwords(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t scheme = s.find("://", pos);
    if (scheme == std::string_view::npos) break;
    const std::size_t auth_begin = scheme + 3;
    std::size_t auth_end = auth_begin;
    while (auth_end < s.size() && s[auth_end] != '/' && s[auth_end] != '?' && s[auth_end] != '#' &&
           !is_space(s[auth_end])) {
      ++auth_end;
    }
    const std::string_view authority = s.substr(auth_begin, auth_end - auth_begin);
    const std::size_t at = authority.rfind('@');
    const std::size_t colon = at == std::string_view::npos ? at : authority.substr(0, at).find(':');
    if (colon == std::string_view::npos) {
      out.append(s.substr(pos, auth_end - pos));
    } else {
      out.append(s.substr(pos, auth_begin + colon + 1 - pos)).append(masked).append(authority.substr(at));
    }
    pos = auth_end;
  }
  out.append(s.substr(pos));
  return out;
}

bool needs_url_redaction(std::string_view s) {
  return s.find('=') != std::string_view::npos || s.find("://") != std::string_view::npos;
}

json redact_value(const json& value) {
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [key, item] : value.items()) out[key] = is_secret_key(key) ? json(masked) : redact_value(item);
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const auto& item : value) out.push_back(redact_value(item));
    return out;
  }
  if (value.is_string() && needs_url_redaction(value.get_ref<const std::string&>())) {
    return redact_url(value.get_ref<const std::string&>());
  }
  return value;
}

void append_json_string(std::string& out, std::string_view s) {
  // `replace`: invalid UTF-8 becomes U+FFFD instead of throwing mid-log.
  out.append(json(s).dump(-1, ' ', false, json::error_handler_t::replace));
}

// Serializes with redaction on the fly (no redacted copy of the fields).
void append_redacted(std::string& out, const json& value) {
  if (value.is_object()) {
    out.push_back('{');
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, key);
      out.push_back(':');
      if (is_secret_key(key)) {
        append_json_string(out, masked);
      } else {
        append_redacted(out, item);
      }
    }
    out.push_back('}');
  } else if (value.is_array()) {
    out.push_back('[');
    bool first = true;
    for (const auto& item : value) {
      if (!first) out.push_back(',');
      first = false;
      append_redacted(out, item);
    }
    out.push_back(']');
  } else if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    append_json_string(out, needs_url_redaction(s) ? redact_url(s) : s);
  } else {
    out.append(value.dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere left to report a broken stderr
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string_view to_string(log_level level) {
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warn: return "warn";
    case log_level::error: return "error";
  }
  return "unknown";
}

std::optional<log_level> parse_log_level(std::string_view text) {
  const std::string lower = normalized_key(text);
  for (const log_level level : {log_level::debug, log_level::info, log_level::warn, log_level::error}) {
    if (lower == to_string(level)) return level;
  }
  return std::nullopt;
}

bool is_secret_key(std::string_view key) {
  static constexpr std::array<std::string_view, 8> markers{"secret", "token", "password", "passwd",
                                                           "key",    "auth",  "cookie",   "credential"};
  // Identifiers that merely contain a marker word; on-call needs to see them.
  static constexpr std::array<std::string_view, 2> not_secret{"idempotency_key", "lease_token"};
  const std::string k = normalized_key(key);
  for (const std::string_view exempt : not_secret) {
    if (k.ends_with(exempt)) return false;
  }
  return std::any_of(markers.begin(), markers.end(),
                     [&](std::string_view m) { return k.find(m) != std::string::npos; });
}

std::string redact_url(std::string_view url) { return mask_userinfo_passwords(mask_secret_assignments(url)); }

json redact(const json& fields) { return redact_value(fields); }

std::string format_timestamp(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(t);
  const auto day = floor<days>(ms);
  const year_month_day ymd{day};
  const hh_mm_ss hms{ms - day};
  std::array<char, 32> buf{};
  const int n =
      std::snprintf(buf.data(), buf.size(), "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
                    static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                    static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                    static_cast<int>(hms.seconds().count()), static_cast<int>(hms.subseconds().count()));
  return std::string(buf.data(), static_cast<std::size_t>(std::max(n, 0)));
}

std::string format_log_line(std::chrono::system_clock::time_point ts, log_level level, std::string_view msg,
                            const json& fields) {
  std::string line;
  line.reserve(96 + msg.size());
  line.append("{\"ts\":\"").append(format_timestamp(ts)).append("\",\"level\":\"");
  line.append(to_string(level)).append("\",\"msg\":");
  append_json_string(line, msg);
  if (fields.is_object()) {
    for (const auto& [key, item] : fields.items()) {
      line.push_back(',');
      const bool reserved = key == "ts" || key == "level" || key == "msg";
      append_json_string(line, reserved ? "field_" + key : key);
      line.push_back(':');
      if (is_secret_key(key)) {
        append_json_string(line, masked);
      } else {
        append_redacted(line, item);
      }
    }
  } else if (!fields.is_null()) {
    line.append(",\"fields\":");
    append_redacted(line, fields);
  }
  line.push_back('}');
  return line;
}

logger::logger(log_level min_level, std::ostream* out, clock_fn clock)
    : min_level_(min_level), out_(out), clock_(clock) {}

void logger::log(log_level level, std::string_view msg, const json& fields) noexcept {
  if (!enabled(level)) return;
  write_line(level, msg, fields);
}

void logger::write_line(log_level level, std::string_view msg, const json& fields) noexcept {
  try {
    std::string line = format_log_line(clock_(), level, msg, fields);
    line.push_back('\n');
    if (out_ == nullptr) {
      write_all(STDERR_FILENO, line);  // one write(2) per line: lines never interleave
      return;
    }
    const std::lock_guard lock{mutex_};
    out_->write(line.data(), static_cast<std::streamsize>(line.size()));
    out_->flush();
  } catch (...) {
    // Out of memory or a throwing stream: dropping one log line beats ending the process.
  }
}

}  // namespace outbox

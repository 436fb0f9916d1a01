#pragma once
// A tiny structured logger: one JSON object per line,
//   {"ts":"2026-03-01T12:00:00.123Z","level":"info","msg":"claimed","rows":12}
// written with a single write so lines from concurrent writers never interleave.
// Values of keys that look secret are replaced by "***" at any depth, and
// passwords inside URLs/conninfo strings under *url / *dsn / *conninfo keys are masked.
//
// Cheap when filtered: pass fields as a lambda and it only runs when the level is on:
//   log.debug("lease renewed", [&] { return nlohmann::json{{"row_id", id}}; });
#include <chrono>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace outbox {

enum class log_level { debug = 0, info = 1, warn = 2, error = 3 };

[[nodiscard]] std::string_view to_string(log_level level);
// "debug" | "info" | "warn" | "error" (case-insensitive); nullopt otherwise.
[[nodiscard]] std::optional<log_level> parse_log_level(std::string_view text);

// True for names containing SECRET, TOKEN, PASSWORD, KEY, AUTH, COOKIE or
// CREDENTIAL (case-insensitive), e.g. "access_token", "x-api-key", "authorization".
// Exception: idempotency keys are identifiers on-call needs, not secrets.
[[nodiscard]] bool is_secret_key(std::string_view key);

// Masks the password in "scheme://user:password@host/..." and in libpq conninfo
// "... password=xyz ..." as "***"; also values of secret-looking query parameters.
[[nodiscard]] std::string redact_url(std::string_view url);

// A copy of `fields` with every secret-looking key's value replaced by "***"
// (recursively through objects and arrays) and URL passwords masked.
[[nodiscard]] nlohmann::json redact(const nlohmann::json& fields);

// RFC 3339 UTC with milliseconds: "2026-03-01T12:00:00.123Z".
[[nodiscard]] std::string format_timestamp(std::chrono::system_clock::time_point t);

class logger {
 public:
  using clock_fn = std::chrono::system_clock::time_point (*)();

  // Writes to stderr (fd 2, one write(2) per line) unless `out` is given.
  explicit logger(log_level min_level = log_level::info, std::ostream* out = nullptr,
                  clock_fn clock = &std::chrono::system_clock::now);

  logger(const logger&) = delete;
  logger& operator=(const logger&) = delete;

  [[nodiscard]] bool enabled(log_level level) const { return level >= min_level_; }
  void set_level(log_level level) { min_level_ = level; }
  [[nodiscard]] log_level level() const { return min_level_; }

  // Fields should be a JSON object (null = none; anything else lands under "fields").
  // Keys "ts", "level" and "msg" in fields are renamed "field_ts" etc. Never throws.
  void log(log_level level, std::string_view msg, const nlohmann::json& fields = nullptr) noexcept;

  // Lazy form: `make_fields()` runs only when `level` is enabled.
  template <typename F>
  requires std::is_invocable_r_v<nlohmann::json, F&>
  void log(log_level level, std::string_view msg, F&& make_fields) noexcept {
    if (!enabled(level)) return;
    try {
      write_line(level, msg, make_fields());
    } catch (...) {
      write_line(level, msg, nullptr);  // a throwing field builder must not lose the message
    }
  }

  // Shorthands; each also has the lazy lambda form.
  void debug(std::string_view msg, const nlohmann::json& fields = nullptr) noexcept {
    log(log_level::debug, msg, fields);
  }
  template <typename F>
  requires std::is_invocable_r_v<nlohmann::json, F&>
  void debug(std::string_view msg, F&& make_fields) noexcept {
    log(log_level::debug, msg, std::forward<F>(make_fields));
  }
  void info(std::string_view msg, const nlohmann::json& fields = nullptr) noexcept {
    log(log_level::info, msg, fields);
  }
  template <typename F>
  requires std::is_invocable_r_v<nlohmann::json, F&>
  void info(std::string_view msg, F&& make_fields) noexcept { log(log_level::info, msg, std::forward<F>(make_fields)); }
  void warn(std::string_view msg, const nlohmann::json& fields = nullptr) noexcept {
    log(log_level::warn, msg, fields);
  }
  template <typename F>
  requires std::is_invocable_r_v<nlohmann::json, F&>
  void warn(std::string_view msg, F&& make_fields) noexcept { log(log_level::warn, msg, std::forward<F>(make_fields)); }
  void error(std::string_view msg, const nlohmann::json& fields = nullptr) noexcept {
    log(log_level::error, msg, fields);
  }
  template <typename F>
  requires std::is_invocable_r_v<nlohmann::json, F&>
  void error(std::string_view msg, F&& make_fields) noexcept {
    log(log_level::error, msg, std::forward<F>(make_fields));
  }

 private:
  void write_line(log_level level, std::string_view msg, const nlohmann::json& fields) noexcept;

  log_level min_level_;
  std::ostream* out_;
  clock_fn clock_;
  std::mutex mutex_;  // only guards the ostream sink; fd writes are atomic per line
};

// Builds one log line (without the trailing newline); exposed for tests.
[[nodiscard]] std::string format_log_line(std::chrono::system_clock::time_point ts, log_level level,
                                          std::string_view msg, const nlohmann::json& fields);

}  // namespace outbox

#pragma once
// Query parameters, always sent separately from the SQL text (never concatenated).
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace outbox::db {

using param = std::optional<std::string>;  // nullopt is SQL NULL
using params = std::vector<param>;

// A time as the statements take it: milliseconds since the Unix epoch.
[[nodiscard]] inline std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// One PostgreSQL array literal built element by element, for statements that
// pass a column of values as one parameter (`unnest($2::text[])`): a settle
// writes 18 of them, so each is written in place rather than from a vector of
// per-row strings first.
class array_literal {
 public:
  explicit array_literal(std::size_t reserve_bytes = 0);
  void add_int(std::int64_t value);
  void add_bool(bool value);
  void add_text(std::string_view value);  // quoted and escaped
  void add_null();
  [[nodiscard]] std::string finish() &&;

 private:
  void separate();
  std::string text_;
};

// PostgreSQL array literals for passing many values as one parameter
// (e.g. `= ANY($1::bigint[])`, `unnest($2::text[])`).
[[nodiscard]] std::string int_array(std::span<const std::int64_t> values);
[[nodiscard]] std::string text_array(std::span<const std::optional<std::string>> values);
[[nodiscard]] std::string text_array(std::span<const std::string> values);
[[nodiscard]] std::string bool_array(const std::vector<bool>& values);

}  // namespace outbox::db

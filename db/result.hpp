#pragma once
// A completed query result: read-only access by row and column, values as text.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "db/pg_handles.hpp"

namespace outbox::db {

class result {
 public:
  result() = default;
  explicit result(pgresult_ptr r) : res_(std::move(r)) {}

  [[nodiscard]] int rows() const noexcept;
  [[nodiscard]] int columns() const noexcept;
  // Rows changed by INSERT/UPDATE/DELETE (0 for other statements).
  [[nodiscard]] std::int64_t affected() const;
  // Column index by name; throws std::out_of_range for an unknown name.
  [[nodiscard]] int column(std::string_view name) const;

  [[nodiscard]] bool is_null(int row, int col) const;
  // Text value; an empty view for NULL.
  [[nodiscard]] std::string_view text(int row, int col) const;
  [[nodiscard]] std::optional<std::string> opt_text(int row, int col) const;
  [[nodiscard]] std::int64_t int64(int row, int col) const;  // throws on NULL or non-number
  [[nodiscard]] std::optional<std::int64_t> opt_int64(int row, int col) const;
  [[nodiscard]] bool boolean(int row, int col) const;  // 't' / 'f'

 private:
  pgresult_ptr res_;
};

}  // namespace outbox::db

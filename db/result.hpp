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

  [[nodiscard]] bool is_null(int row, int col) const;
  // Text value; an empty view for NULL. The view points into the libpq result, so
  // it is valid only while this result lives: copy it (std::string) to keep it.
  [[nodiscard]] std::string_view text(int row, int col) const&;
  // On a temporary (`db.query(...).text(0, 0)`) the value is copied, since the
  // result is freed at the end of the statement and a view would dangle.
  [[nodiscard]] std::string text(int row, int col) const&&;
  [[nodiscard]] std::int64_t int64(int row, int col) const;  // throws on NULL or non-number
  [[nodiscard]] std::optional<std::int64_t> opt_int64(int row, int col) const;
  [[nodiscard]] bool boolean(int row, int col) const;  // 't' / 'f'

 private:
  pgresult_ptr res_;
};

}  // namespace outbox::db

#include "db/result.hpp"

#include <charconv>
#include <stdexcept>

namespace outbox::db {

int result::rows() const noexcept { return res_ ? PQntuples(res_.get()) : 0; }

int result::columns() const noexcept { return res_ ? PQnfields(res_.get()) : 0; }

std::int64_t result::affected() const {
  if (!res_) return 0;
  const char* n = PQcmdTuples(res_.get());
  std::int64_t v = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

bool result::is_null(int row, int col) const { return PQgetisnull(res_.get(), row, col) != 0; }

std::string_view result::text(int row, int col) const& {
  return {PQgetvalue(res_.get(), row, col), static_cast<std::size_t>(PQgetlength(res_.get(), row, col))};
}

std::string result::text(int row, int col) const&& { return std::string(text(row, col)); }

std::int64_t result::int64(int row, int col) const {
  const auto v = opt_int64(row, col);
  if (!v) throw std::runtime_error("unexpected NULL in column " + std::string(PQfname(res_.get(), col)));
  return *v;
}

std::optional<std::int64_t> result::opt_int64(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  const auto s = text(row, col);
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size())
    throw std::runtime_error("not an integer in column " + std::string(PQfname(res_.get(), col)));
  return v;
}

bool result::boolean(int row, int col) const { return text(row, col) == "t"; }

}  // namespace outbox::db

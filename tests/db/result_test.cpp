// db::result::text hands out a view into the libpq result only while the result
// lives: on a temporary (`db.query(...).text(0, 0)`) it returns an owning copy,
// so `const auto key = db.query(...).text(0, 0);` cannot dangle (the
// heap-use-after-free ASan found in operations_store_pgtest). Checked at compile
// time, so no database is needed.
#include "db/result.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace result_test {

using outbox::db::result;

TEST_CASE("result::text is a view on a living result and a copy on a temporary") {
  static_assert(std::is_same_v<decltype(std::declval<const result&>().text(0, 0)), std::string_view>);
  static_assert(std::is_same_v<decltype(std::declval<result&>().text(0, 0)), std::string_view>);
  static_assert(std::is_same_v<decltype(std::declval<result>().text(0, 0)), std::string>);
  static_assert(std::is_same_v<decltype(std::declval<const result&&>().text(0, 0)), std::string>);
  CHECK(result{}.rows() == 0);
}

}  // namespace result_test

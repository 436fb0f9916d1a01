// One timestamp format in the commands' text output, whatever PostgreSQL wrote.
#include <doctest/doctest.h>

#include "dispatcher/ops/display_time.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace display_time_test {

using outbox::display_time;

TEST_CASE("timestamps from json and from ::text, in any session time zone, come out as RFC 3339 UTC seconds") {
  CHECK(display_time("2026-12-06T03:54:05.123456+00:00") == "2026-12-06T03:54:05Z");  // to_jsonb
  CHECK(display_time("2026-12-06 03:54:05.123+00") == "2026-12-06T03:54:05Z");        // ::text, DateStyle ISO
  CHECK(display_time("2026-12-06 04:54:05+01") == "2026-12-06T03:54:05Z");
  CHECK(display_time("2026-12-06 09:24:05.5+05:30") == "2026-12-06T03:54:05Z");
  CHECK(display_time("2026-12-05 23:54:05-04") == "2026-12-06T03:54:05Z");  // across midnight
  CHECK(display_time("2026-12-06T03:54:05Z") == "2026-12-06T03:54:05Z");    // already so
}

TEST_CASE("text that is not a timestamp with an offset passes unchanged") {
  CHECK(display_time("") == "");
  CHECK(display_time("never") == "never");
  CHECK(display_time("2026-12-06 03:54:05") == "2026-12-06 03:54:05");  // no offset: which zone?
  CHECK(display_time("2026-13-06 03:54:05+00") == "2026-13-06 03:54:05+00");
  CHECK(display_time("2026-12-06 03:54:05+0x") == "2026-12-06 03:54:05+0x");
  CHECK(display_time("migration 0003") == "migration 0003");
}

}  // namespace display_time_test

#include "providers/api_versions.hpp"

#include <doctest/doctest.h>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace api_versions_test {

using namespace outbox::providers;
using namespace std::chrono;

system_clock::time_point on(year_month_day day) { return system_clock::time_point{sys_days{day}}; }

TEST_CASE("api versions: Meta's Marketing API table, the newest version is the default") {
  CHECK(newest_api_version("meta") == "v27.0");
  CHECK(api_version_sunset("meta", "v25.0") == sys_days{2027y / February / 23});
  CHECK(api_version_sunset("meta", "v24.0") == sys_days{2026y / November / 10});
  CHECK_FALSE(api_version_sunset("meta", "v27.0"));  // "TBD" in Meta's table
  CHECK_FALSE(api_version_sunset("meta", "v99.0"));  // not in the table: nothing is claimed
  CHECK_FALSE(api_version_sunset("tiktok", "v25.0"));
  CHECK(newest_api_version("webhook").empty());
}

TEST_CASE("api versions: a warning from 60 days before the sunset, and after it") {
  CHECK_FALSE(api_sunset_warning("meta", "v25.0", on(2026y / December / 4)));   // 81 days left
  CHECK_FALSE(api_sunset_warning("meta", "v25.0", on(2026y / December / 24)));  // 61 days left
  CHECK(api_sunset_warning("meta", "v25.0", on(2026y / December / 25)) ==
        "API version v25.0 is retired on 2027-02-23 (in 60 days); set api_version to v27.0");
  CHECK(api_sunset_warning("meta", "v25.0", on(2027y / February / 22)) ==
        "API version v25.0 is retired on 2027-02-23 (in 1 day); set api_version to v27.0");
  CHECK(api_sunset_warning("meta", "v25.0", on(2027y / March / 1)) ==
        "API version v25.0 was retired on 2027-02-23; set api_version to v27.0");
  CHECK_FALSE(api_sunset_warning("meta", "v27.0", on(2030y / January / 1)));
  CHECK_FALSE(api_sunset_warning("webhook", "", on(2026y / December / 25)));
}

}  // namespace api_versions_test

// `--older-than` durations: units, and no overflow however large the number.
#include "dispatcher/duration_arg.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using outbox::read_duration_arg;

TEST_CASE("durations take s, m, h, d and y") {
  CHECK(read_duration_arg("90").value == 90s);
  CHECK(read_duration_arg("1y").value == 365 * 24h);
  CHECK(read_duration_arg("10y").value == outbox::max_duration_arg);
  CHECK(read_duration_arg("3650d").value == outbox::max_duration_arg);
  CHECK(read_duration_arg("0").value == 0s);
  CHECK(read_duration_arg("30d").problem.empty());
}

TEST_CASE("durations over 10 years are refused with a clear message, never overflowed") {
  for (const char* huge : {"999999999999d", "2147483648s", "70y", "3651d", "11y", "99999999999999999999",
                           "9223372036854775807s", "9223372036854775807y", "315360001"}) {
    CAPTURE(huge);
    const auto d = read_duration_arg(huge);
    CHECK_FALSE(d.value.has_value());
    CHECK(d.problem.find("longer than the maximum of 10 years") != std::string::npos);
    CHECK_FALSE(outbox::parse_duration_arg(huge).has_value());
  }
  CHECK(read_duration_arg("315360000").value == outbox::max_duration_arg);
}

TEST_CASE("malformed durations say what a duration looks like") {
  for (const char* bad : {"", "m", "y", "-5", "+5", "5x", "1.5h", "abc", "5 d", " 5"}) {
    CAPTURE(bad);
    const auto d = read_duration_arg(bad);
    CHECK_FALSE(d.value.has_value());
    CHECK(d.problem.starts_with("not a duration"));
  }
}

// Command-line durations (`--older-than`, `--since`): a unit is required, zero
// only where it means something, and no overflow however large the number.
#include "dispatcher/cli/duration_arg.hpp"

#include <doctest/doctest.h>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace duration_arg_test {

using namespace std::chrono_literals;
using outbox::read_duration_arg;
using outbox::zero_duration;

TEST_CASE("durations take s, m, h, d and y") {
  CHECK(read_duration_arg("90s").value == 90s);
  CHECK(read_duration_arg("15m").value == 15min);
  CHECK(read_duration_arg("2h").value == 2h);
  CHECK(read_duration_arg("1y").value == 365 * 24h);
  CHECK(read_duration_arg("10y").value == outbox::max_duration_arg);
  CHECK(read_duration_arg("3650d").value == outbox::max_duration_arg);
  CHECK(read_duration_arg("315360000s").value == outbox::max_duration_arg);
  CHECK(read_duration_arg("0s").value == 0s);
  CHECK(read_duration_arg("30d").problem.empty());
}

TEST_CASE("a duration without a unit is refused and the message shows the units") {
  for (const char* bare : {"30", "0", "90", "99999999999999999999"}) {
    CAPTURE(bare);
    const auto d = read_duration_arg(bare);
    CHECK_FALSE(d.value.has_value());
    CHECK_FALSE(outbox::parse_duration_arg(bare).has_value());
  }
  CHECK(read_duration_arg("30").problem == "'30' needs a unit: 30s, 30m, 30h, 30d");
}

TEST_CASE("zero is refused where it would mean everything") {
  for (const char* zero : {"0s", "0m", "0d", "00h"}) {
    CAPTURE(zero);
    const auto d = read_duration_arg(zero, zero_duration::refused);
    CHECK_FALSE(d.value.has_value());
    CHECK(d.problem.find("is zero") != std::string::npos);
    CHECK(read_duration_arg(zero, zero_duration::allowed).value == 0s);
  }
  CHECK(read_duration_arg("1s", zero_duration::refused).value == 1s);
}

TEST_CASE("durations over 10 years are refused with a clear message, never overflowed") {
  for (const char* huge : {"999999999999d", "2147483648s", "70y", "3651d", "11y", "99999999999999999999s",
                           "9223372036854775807s", "9223372036854775807y", "315360001s"}) {
    CAPTURE(huge);
    const auto d = read_duration_arg(huge);
    CHECK_FALSE(d.value.has_value());
    CHECK(d.problem.find("longer than the maximum of 10 years") != std::string::npos);
    CHECK_FALSE(outbox::parse_duration_arg(huge).has_value());
  }
}

TEST_CASE("malformed durations say what a duration looks like") {
  for (const char* bad : {"", "m", "y", "-5s", "+5s", "5x", "1.5h", "abc", "5 d", " 5s", "5ss"}) {
    CAPTURE(bad);
    const auto d = read_duration_arg(bad);
    CHECK_FALSE(d.value.has_value());
    CHECK(d.problem.starts_with("not a duration"));
  }
}

TEST_CASE("what looks like a duration, for --since: digits and at most one letter") {
  for (const char* yes : {"30", "1h", "30d", "5x"}) {
    CAPTURE(yes);
    CHECK(outbox::looks_like_duration(yes));
  }
  for (const char* no : {"", "d", "2026-11-30 08:00+00", "2026-11-30", "yesterday", "1.5h", "now"}) {
    CAPTURE(no);
    CHECK_FALSE(outbox::looks_like_duration(no));
  }
}

}  // namespace duration_arg_test

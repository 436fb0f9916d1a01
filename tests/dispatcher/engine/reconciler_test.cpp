// The reconciler's schedule, as pure arithmetic: no database, no clock.
#include "dispatcher/engine/reconciler.hpp"

#include <doctest/doctest.h>

namespace reconciler_test {

TEST_CASE("reconciler: a request still processing is read at widening intervals") {
  using outbox::reconciler;
  using std::chrono::seconds;
  CHECK(reconciler::processing_interval(seconds{1800}, 0) == seconds{1800});
  CHECK(reconciler::processing_interval(seconds{1800}, 1) == seconds{3600});
  CHECK(reconciler::processing_interval(seconds{1800}, 3) == seconds{14400});
  CHECK(reconciler::processing_interval(seconds{1800}, 5) == std::chrono::hours{8});
  CHECK(reconciler::processing_interval(seconds{1800}, 1000) == std::chrono::hours{8});
  CHECK(reconciler::processing_interval(seconds{86400}, 2) == seconds{86400});  // a longer delay is kept
  // Read 30 min after acceptance, then at widening intervals.
  seconds at{1800};  // the first read, STATUS_CHECK_DELAY_SECONDS after acceptance
  int reads = 1;
  int reads_in_a_day = 1;
  while (at < reconciler::give_up_after) {
    at += reconciler::processing_interval(seconds{1800}, reads - 1);  // reads made before the one just made
    ++reads;
    if (at <= std::chrono::hours{24}) ++reads_in_a_day;
  }
  CHECK(reads_in_a_day == 7);  // Google finishes within 24 h: at most 7 reads
  CHECK(reads == 10);          // the 10th, at 48 h, records UNKNOWN
}

}  // namespace reconciler_test

// A request sent twice is recorded twice (issue 30): when a reused keep-alive
// connection closes after reading the whole request without answering, the
// client sends it again on a fresh connection; the attempts log keeps that
// first try as an attempt of its own, and the metric counts the resend.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace resend_log_pgtest {

using namespace std::chrono_literals;
using outbox::test::engine_harness;
using outbox::test::response_plan;

TEST_CASE("a request resent on a fresh connection leaves its unanswered first try in the attempts log") {
  engine_harness h;
  // The first row's answer keeps its connection alive; the second row's request
  // arrives on it whole, and the server closes without a word.
  h.server.script({response_plan::reply(200), response_plan::close_without_response(), response_plan::reply(200)});
  h.start();
  const auto first = h.enqueue(1, "Lead");
  REQUIRE(h.wait_state(first, "sent"));
  const auto second = h.enqueue(2, "Lead");
  REQUIRE(h.wait_state(second, "sent"));
  h.stop();

  const auto requests = h.server.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[1].connection == requests[0].connection);
  CHECK(requests[2].connection != requests[1].connection);
  // Two attempts logged, the unanswered one first; the row's budget charged once.
  const auto log = h.db.query(
      "SELECT outcome, coalesce(error, ''), attempt FROM event_delivery_attempt WHERE delivery_id = $1 ORDER BY id",
      {std::to_string(second)});
  REQUIRE(log.rows() == 2);
  CHECK(log.text(0, 0) == "no_answer_resent");
  CHECK(std::string(log.text(0, 1)).find("may have reached the server") != std::string::npos);
  CHECK(log.text(1, 0) == "delivered");
  CHECK(log.text(0, 2) == log.text(1, 2));
  CHECK(h.attempts_of(second) == 1);
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1", {std::to_string(first)}) ==
        1);
  CHECK(h.metrics_text().find("outbox_requests_resent_total{provider=\"webhook\",destination=\"default\"} 1") !=
        std::string::npos);
}

}  // namespace resend_log_pgtest

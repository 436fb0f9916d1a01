// The retention of personal data run by the maintenance loop (issue 51), in
// virtual time: a final row loses its personal data once its retention is over,
// a sent row after OUTBOX_KEEP_PERSONAL_DATA_SENT_SECONDS, a dead one after
// OUTBOX_KEEP_PERSONAL_DATA_DEAD_SECONDS, and the metric counts them.
#include <doctest/doctest.h>

#include "tests/support/engine_rig.hpp"

namespace engine_personal_data_test {

using namespace std::chrono_literals;
using outbox::test::engine_rig;
using outbox::test::scripted_answer;

namespace {

constexpr const char* mary = R"({"event_time": 1767225600, "value": 5, "email": "mary@example.com"})";

}  // namespace

TEST_CASE("engine personal data: sent and dead rows lose it after their own retention, counted") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_KEEP_PERSONAL_DATA_SENT_SECONDS"] = "60";
    env["OUTBOX_KEEP_PERSONAL_DATA_DEAD_SECONDS"] = "300";
  });
  rig.http.script.push_back(scripted_answer::reply(200));
  rig.http.script.push_back(scripted_answer::reply(400, R"({"error":"bad"})"));  // refused: dead
  rig.start();
  const auto sent = rig.enqueue(1, "Lead", mary);
  REQUIRE(rig.run_until_state(sent, "sent"));
  const auto dead = rig.enqueue(2, "Lead", mary);
  REQUIRE(rig.run_until_state(dead, "dead"));
  const auto t0 = rig.clock.system_now();
  CHECK(rig.row(sent).payload.find("mary@example.com") != std::string::npos);
  REQUIRE(rig.run_until([&] { return rig.row(sent).personal_data_erased_at.has_value(); }, 120s));
  CHECK(rig.clock.system_now() - t0 >= 55s);
  CHECK(rig.clock.system_now() - t0 <= 65s);  // within a sweep of its time
  CHECK(rig.row(sent).payload.find("mary@example.com") == std::string::npos);
  CHECK(rig.row(sent).payload.find(R"("email":"[erased]")") != std::string::npos);
  CHECK(rig.row(sent).payload.find(R"("value":5)") != std::string::npos);
  CHECK(rig.row(sent).personal_data_erased_why == "retention");
  CHECK_FALSE(rig.row(dead).personal_data_erased_at.has_value());  // its week (here 300 s) is not over
  REQUIRE(rig.run_until([&] { return rig.row(dead).personal_data_erased_at.has_value(); }, 400s));
  CHECK(rig.clock.system_now() - t0 >= 295s);
  CHECK(rig.metrics().personal_data_erased == 2);
}

TEST_CASE("engine personal data: a retention of 0 keeps it") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_KEEP_PERSONAL_DATA_SENT_SECONDS"] = "0";
    env["OUTBOX_KEEP_PERSONAL_DATA_DEAD_SECONDS"] = "0";
  });
  rig.start();
  const auto sent = rig.enqueue(1, "Lead", mary);
  REQUIRE(rig.run_until_state(sent, "sent"));
  (void)rig.run_until([] { return false; }, 600s);
  CHECK_FALSE(rig.row(sent).personal_data_erased_at.has_value());
  CHECK(rig.store.calls("erase_personal_data") == 0);
}

TEST_CASE("engine personal data: a row of a forgotten lead waiting for its slot is dropped, not sent") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_WAKE_MODE"] = "listen";
    env["OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY"] = "1";
  });
  rig.http.script.push_back(scripted_answer::reply(200).delayed(5000ms));  // holds the one slot
  rig.start();
  const auto first = rig.enqueue(1, "Lead", mary);
  REQUIRE(rig.run_until([&] { return rig.http.sent.size() == 1; }, 10s));
  const auto waiting = rig.enqueue(7, "Lead", mary);
  REQUIRE(rig.run_until([&] { return rig.row(waiting).state == "sending"; }, 10s));
  // What outbox_forget_lead(7) does to the row, and the notification it sends at commit.
  auto& row = rig.store.row(waiting);
  row.state = "dead";
  row.last_error = "forgotten on request";
  row.lease_token.reset();
  row.lease_owner.reset();
  row.lease_expires_at.reset();
  rig.store.notify("outbox:forgotten:7");
  REQUIRE(rig.run_until_state(first, "sent", 20s));
  (void)rig.run_until([] { return false; }, 10s);
  CHECK(rig.http.sent.size() == 1);  // the forgotten lead's row never went out
  CHECK(rig.row(waiting).state == "dead");
  CHECK(rig.logs().find("rows of a forgotten lead dropped before their request") != std::string::npos);
}

}  // namespace engine_personal_data_test

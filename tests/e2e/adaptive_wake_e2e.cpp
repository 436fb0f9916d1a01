// The adaptive wake mode with real dispatcher processes: a dispatcher killed
// while marked awake silences notifications only until its mark expires, and
// several dispatchers draining a concurrent stream deliver every row once
// while most inserting statements skip pg_notify.
#include <doctest/doctest.h>

#include <csignal>
#include <map>

#include "tests/support/crm_writers.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/notify_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace adaptive_wake_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::dispatcher_process;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::notify_probe;
using steady = std::chrono::steady_clock;

namespace {

long long valid_marks(const e2e_fixture& fx) {
  return fx.db.scalar("SELECT count(*) FROM outbox_dispatcher_awake WHERE awake_until > clock_timestamp()");
}

}  // namespace

TEST_CASE("adaptive wake: a dispatcher killed while marked awake silences notifications only until its mark expires") {
  e2e_fixture fx;
  notify_probe probe(fx.db.conninfo());
  // Stays awake for a minute after finding rows; polls only once a minute.
  auto& first = fx.start_dispatcher({{"OUTBOX_ADAPTIVE_TTL_MS", "1500"},
                                     {"OUTBOX_ADAPTIVE_LINGER_MS", "60000"},
                                     {"OUTBOX_ADAPTIVE_WAKE_RATE", "1"},
                                     {"OUTBOX_POLL_INTERVAL_MS", "60000"}},
                                    "awake-then-killed");
  REQUIRE(first.wait_for_log("listening for new rows", 15s));
  long long lead = 1;
  REQUIRE(eventually(
      [&] {
        fx.db.query(
            "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{}'::jsonb) "
            "FROM generate_series($1::bigint, $1::bigint + 4) g",
            {std::to_string(lead)});  // a burst: rows pile up between claims
        lead += 5;
        return valid_marks(fx) > 0;
      },
      10s));
  REQUIRE(eventually([&] { return fx.count("state <> 'sent'") == 0; }, 10s));
  first.kill();
  REQUIRE(first.wait_exit(10s).has_value());
  const auto killed = steady::now();

  (void)probe.count_since_last();
  if (valid_marks(fx) > 0) {  // normally: the mark outlives the process for up to 1.5 s
    fx.enqueue(lead++);
    CHECK(probe.count_since_last() == 0);
  }
  // The mark expires: inserts notify again, without anyone cleaning up.
  bool notified = false;
  REQUIRE(eventually(
      [&] {
        fx.enqueue(lead++);
        notified = probe.count_since_last() == 1;
        return notified;
      },
      10s));
  const auto silent_for = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - killed);
  MESSAGE("notifications resumed " << silent_for.count() << " ms after the kill (awake TTL 1500 ms)");
  CHECK(silent_for < 5s);

  // A new dispatcher catches up at start and is then woken by notifications (its poll is a minute).
  auto& second = fx.start_dispatcher({{"OUTBOX_POLL_INTERVAL_MS", "60000"}}, "successor");
  REQUIRE(second.wait_for_log("listening for new rows", 15s));
  REQUIRE(eventually([&] { return fx.count("state <> 'sent'") == 0; }, 15s));
  REQUIRE(eventually([&] { return valid_marks(fx) == 0; }, 10s));  // it went idle
  const auto before = fx.server.requests().size();
  const auto id = fx.enqueue(lead++);
  CHECK(fx.server.wait_for_requests(before + 1, 10s));
  CHECK(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 10s));
  second.signal(SIGTERM);
  CHECK(second.wait_exit(15s) == 0);
}

TEST_CASE(
    "adaptive wake: three dispatchers drain a concurrent stream; most statements skip pg_notify; every row once") {
  e2e_fixture fx;
  notify_probe probe(fx.db.conninfo());
  std::vector<dispatcher_process*> dispatchers;
  for (int i = 1; i <= 3; ++i) {
    dispatchers.push_back(&fx.start_dispatcher(
        {{"OUTBOX_CLAIM_BATCH", "20"},
         // Each sees about a third of the stream, and a loaded box (the CI run builds beside the
         // tests) inserts well below its idle rate: a low threshold keeps this about the mechanism.
         {"OUTBOX_ADAPTIVE_WAKE_RATE", "30"},
         {"OUTBOX_INSTANCE_NAME", "adaptive-" + std::to_string(i)}},
        "dispatcher-" + std::to_string(i)));
  }
  for (auto* d : dispatchers) REQUIRE(d->wait_for_log("listening for new rows", 15s));
  (void)probe.count_since_last();

  constexpr int writers = 4;
  constexpr int per_writer = 600;
  constexpr int total = writers * per_writer;  // one row per statement: up to 2,400 notifications
  const auto problems = outbox::test::insert_concurrently(fx.db.conninfo(), writers, per_writer, 1, 1);
  REQUIRE_MESSAGE(problems.empty(), problems.front());
  const int notifications = probe.count_since_last();
  MESSAGE(total << " inserting statements sent " << notifications << " notifications");
  CHECK(notifications < total / 2);

  REQUIRE(fx.server.wait_for_requests(total, 60s));
  REQUIRE(eventually([&] { return fx.count("state <> 'sent'") == 0; }, 30s));
  std::map<std::string, int> seen;
  for (const auto& r : fx.server.requests()) ++seen[r.header("webhook-id").value_or("")];
  CHECK(seen.size() == static_cast<std::size_t>(total));
  int duplicates = 0;
  for (const auto& [key, n] : seen) duplicates += n - 1;
  CHECK(duplicates == 0);
  // Idle again: every dispatcher withdrew its mark, so the next insert notifies.
  REQUIRE(eventually([&] { return fx.db.scalar("SELECT count(*) FROM outbox_dispatcher_awake") == 0; }, 10s));
  fx.enqueue(100000);
  CHECK(probe.count_since_last() == 1);
  for (auto* d : dispatchers) d->signal(SIGTERM);
  for (auto* d : dispatchers) CHECK(d->wait_exit(15s) == 0);
}

}  // namespace adaptive_wake_e2e

// The adaptive wake mode with a real engine: while it drains, inserts skip
// pg_notify; a row whose notification was skipped just before the engine went
// idle is still delivered (by the hand-over rechecks, at worst by the poll).
#include <doctest/doctest.h>
#include <libpq-fe.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/engine_harness.hpp"
#include "tests/support/notify_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace adaptive_wake_pgtest {

using namespace std::chrono_literals;
using outbox::test::engine_harness;
using outbox::test::notify_probe;
using steady = std::chrono::steady_clock;

namespace {

constexpr auto poll_interval = 3000ms;

engine_harness adaptive_harness() {
  return engine_harness([](auto& env) {
    env["OUTBOX_ADAPTIVE_LINGER_MS"] = "50";
    env["OUTBOX_ADAPTIVE_WAKE_RATE"] = "40";  // 2 rows in a 50 ms window
    env["OUTBOX_POLL_INTERVAL_MS"] = std::to_string(poll_interval.count());
  });
}

bool marked_awake(const engine_harness& h) {
  return h.db.scalar("SELECT count(*) FROM outbox_dispatcher_awake WHERE awake_until > clock_timestamp()") > 0;
}

// Starts the engine, then inserts bursts of rows until it has published that it is awake.
void start_and_drive_awake(engine_harness& h, std::int64_t& lead) {
  h.start();
  REQUIRE(h.wait_for([&] { return h.logs().find("listening for new rows") != std::string::npos; }, 10s));
  REQUIRE(h.wait_for(
      [&] {
        // Several rows per statement: rows pile up between claims, as under load.
        h.db.query(
            "SELECT enqueue_event_delivery(g, 'webhook', 'Warmup', '{}'::jsonb) "
            "FROM generate_series($1::bigint, $1::bigint + 4) g",
            {std::to_string(lead)});
        lead += 5;
        return marked_awake(h);
      },
      10s));
}

// How long after `committed` the request for lead `lead` arrived.
std::chrono::milliseconds request_delay(engine_harness& h, std::int64_t lead, steady::time_point committed) {
  const auto key =
      h.db.query("SELECT idempotency_key FROM event_delivery WHERE lead_project_id = $1", {std::to_string(lead)});
  REQUIRE(key.rows() == 1);
  const std::string k(key.text(0, 0));
  std::optional<steady::time_point> arrived;
  REQUIRE(h.wait_for(
      [&] {
        for (const auto& r : h.server.requests()) {
          if (r.header("webhook-id") == k) arrived = r.arrived_at;
        }
        return arrived.has_value();
      },
      poll_interval * 3));
  return std::chrono::duration_cast<std::chrono::milliseconds>(*arrived - committed);
}

}  // namespace

TEST_CASE("adaptive wake: draining marks the engine awake, inserts skip pg_notify, idle withdraws the mark") {
  auto h = adaptive_harness();
  notify_probe probe(h.db.conninfo());
  std::int64_t lead = 1;
  start_and_drive_awake(h, lead);
  (void)probe.count_since_last();
  // Several inserts while the engine is marked awake send no notification.
  int skipped = 0;
  for (int i = 0; i < 5 && marked_awake(h); ++i) {
    h.enqueue(lead++, "WhileAwake");
    skipped += probe.count_since_last() == 0 ? 1 : 0;
  }
  CHECK(skipped > 0);
  CHECK(h.logs().find("marked awake") != std::string::npos);
  // Idle for longer than the linger window: the mark is withdrawn, inserts notify again.
  // Every row sent first: on a loaded machine a claim could find nothing before the
  // last rows committed, go idle, and the hand-over recheck would then find those
  // (inserted without a notification) and rightly mark the engine awake again.
  REQUIRE(
      h.wait_for([&] { return h.db.scalar("SELECT count(*) FROM event_delivery WHERE state <> 'sent'") == 0; }, 10s));
  REQUIRE(h.wait_for([&] { return !marked_awake(h); }, 5s));
  CHECK(h.db.scalar("SELECT count(*) FROM outbox_dispatcher_awake") == 0);
  h.enqueue(lead++, "AfterIdle");
  CHECK(probe.count_since_last() == 1);
  REQUIRE(
      h.wait_for([&] { return h.db.scalar("SELECT count(*) FROM event_delivery WHERE state <> 'sent'") == 0; }, 10s));
  h.stop();
  CHECK(h.db.scalar("SELECT count(*) FROM outbox_dispatcher_awake") == 0);
}

TEST_CASE("adaptive wake: bursts and gaps around the linger window; every row arrives once, within the poll interval") {
  auto h = adaptive_harness();
  h.start();
  REQUIRE(h.wait_for([&] { return h.logs().find("listening for new rows") != std::string::npos; }, 10s));
  std::mutex mutex;
  std::map<std::int64_t, steady::time_point> committed;  // lead -> commit time
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      const std::chrono::milliseconds gaps[] = {0ms, 3ms, 45ms, 60ms, 120ms, 0ms, 10ms, 55ms};
      for (int i = 0; i < 48; ++i) {
        const std::int64_t lead = 10000 * (w + 1) + i;
        // Two rows per statement (lead and lead + 500000), so claims find rows piling up.
        outbox::test::sql(h.db.conninfo(),
                          "SELECT enqueue_event_delivery(l, 'webhook', 'Burst', '{}'::jsonb) "
                          "FROM unnest(ARRAY[$1::bigint, $1::bigint + 500000]) l",
                          {std::to_string(lead)});
        {
          const std::lock_guard lock(mutex);
          committed[lead] = steady::now();
          committed[lead + 500000] = committed[lead];
        }
        std::this_thread::sleep_for(gaps[(i + w) % std::size(gaps)]);  // the load pattern under test
      }
    });
  }
  for (auto& t : writers) t.join();
  REQUIRE(h.server.wait_for_requests(committed.size(), poll_interval * 3));
  REQUIRE(
      h.wait_for([&] { return h.db.scalar("SELECT count(*) FROM event_delivery WHERE state <> 'sent'") == 0; }, 10s));
  std::map<std::string, int> seen;
  for (const auto& r : h.server.requests()) ++seen[r.header("webhook-id").value_or("")];
  CHECK(seen.size() == committed.size());
  for (const auto& [key, n] : seen) CHECK_MESSAGE(n == 1, key);
  std::chrono::milliseconds worst{0};
  for (const auto& [lead, at] : committed) worst = std::max(worst, request_delay(h, lead, at));
  MESSAGE("worst commit-to-request delay: " << worst.count() << " ms");
  CHECK(worst <= poll_interval + 1500ms);
  // The pattern really crossed the linger window many times.
  const auto logs = h.logs();
  std::size_t asleep = 0;
  for (auto at = logs.find("marked asleep"); at != std::string::npos; at = logs.find("marked asleep", at + 1)) ++asleep;
  CHECK(asleep >= 3);
  h.stop();
}

}  // namespace adaptive_wake_pgtest

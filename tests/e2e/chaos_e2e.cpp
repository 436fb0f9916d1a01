// An operator's worst day, bounded to well under a minute: three dispatchers,
// rows inserted one per transaction while every dispatcher backend is
// terminated again and again, PostgreSQL restarts once, one dispatcher is
// SIGKILLed (and replaced), and the endpoint answers 500s, 429s, hangs and
// resets. Nothing may be lost or stuck, and every event the endpoint accepted
// twice must be explained by the SIGKILL: it was in flight in that process.
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/crm_writers.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace chaos_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::recorded_request;
using outbox::test::response_plan;

namespace {

constexpr int rows_total = 600;

// What the endpoint accepted, by idempotency key.
struct ledger {
  std::mutex mutex;
  std::map<std::string, int> accepted;
  std::uint64_t seq = 0;

  response_plan answer(const recorded_request& r) {
    std::lock_guard lock(mutex);
    const auto n = ++seq;
    const auto pick = (n * 2654435761u) % 100;  // deterministic spread over the run
    if (pick < 5) return response_plan::reply(500, R"({"error":"flaky"})");
    if (pick < 7) return response_plan::reply(429, "{}", {{"retry-after", "1"}});
    if (pick < 8) return response_plan::hang();  // past the 2 s request timeout
    if (pick < 9) return response_plan::close_without_response();
    ++accepted[r.header("webhook-id").value_or("")];
    return response_plan::reply(200).after(5ms);
  }
};

long long count_or(const e2e_fixture& fx, const std::string& where, long long fallback) {
  try {
    return fx.count(where);
  } catch (const std::exception&) {
    return fallback;
  }
}

void terminate_dispatcher_backends(const e2e_fixture& fx) {
  try {
    fx.db.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name LIKE 'outbox-dispatcher%'",
        {fx.db.name()});
  } catch (const std::exception&) {
    // The server may be restarting.
  }
}

std::set<std::string> in_flight_keys_of(const e2e_fixture& fx, const std::string& instance_prefix) {
  for (;;) {
    try {
      const auto r = fx.db.query(
          "SELECT idempotency_key FROM event_delivery WHERE state = 'sending' "
          "AND lease_owner LIKE $1",
          {instance_prefix + ":%"});
      std::set<std::string> keys;
      for (int i = 0; i < r.rows(); ++i) keys.insert(std::string(r.text(i, 0)));
      return keys;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(50ms);  // the server restarting: the leases outlive it
    }
  }
}

}  // namespace

// Restarts the shared server: runs alone (the "serial" suite, CMakeLists.txt).
TEST_CASE("chaos: backends terminated, a restart and a SIGKILL lose nothing; duplicates only from the SIGKILL" *
          doctest::test_suite("serial")) {
  e2e_fixture fx;
  ledger endpoint;
  fx.server.set_fallback([&](const recorded_request& r) { return endpoint.answer(r); });
  const char* pg_ctl = std::getenv("PG_TEST_CTL");
  const environment common{{"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", "10"},
                           {"OUTBOX_POLL_INTERVAL_MS", "500"},
                           {"OUTBOX_LOG_LEVEL", "info"}};
  std::vector<outbox::test::dispatcher_process*> dispatchers;
  for (int i = 0; i < 3; ++i) {
    auto extra = common;
    extra["OUTBOX_INSTANCE_NAME"] = "chaos-" + std::to_string(i);
    dispatchers.push_back(&fx.start_dispatcher(extra, "chaos-" + std::to_string(i)));
  }

  // The CRM: one row per transaction, about 60 a second; an insert lost to a
  // fault is simply tried again (the unique key makes it idempotent).
  std::atomic<long long> inserted{0};
  std::thread writer([&] { outbox::test::insert_one_by_one(fx.db.conninfo(), rows_total, inserted, 15ms); });

  // The faults, on a schedule tied to the writer's progress.
  std::set<std::string> killed_in_flight;
  int terminations = 0;
  bool restarted = false, killed = false;
  while (inserted < rows_total) {
    std::this_thread::sleep_for(700ms);
    terminate_dispatcher_backends(fx);
    ++terminations;
    if (!killed && inserted > rows_total / 3) {
      MESSAGE("chaos: SIGKILL at row " << inserted.load());
      dispatchers[0]->kill();
      (void)dispatchers[0]->wait_exit(5s);
      killed_in_flight = in_flight_keys_of(fx, "chaos-0");
      killed = true;
      auto extra = common;
      extra["OUTBOX_INSTANCE_NAME"] = "chaos-0b";
      dispatchers.push_back(&fx.start_dispatcher(extra, "chaos-0b"));
    }
    if (!restarted && pg_ctl && *pg_ctl && inserted > rows_total / 2) {
      REQUIRE(std::system((std::string(pg_ctl) + " restart -m fast >/dev/null 2>&1").c_str()) == 0);
      restarted = true;
    }
  }
  writer.join();
  terminate_dispatcher_backends(fx);
  MESSAGE("chaos: inserts done; waiting for every row to settle");

  // Nothing lost, nothing stuck: every row reaches sent (the SIGKILLed rows after their lease).
  const bool settled = eventually([&] { return count_or(fx, "state IN ('sent', 'dead')", 0) == rows_total; }, 45s);
  INFO(fx.diagnostics());
  REQUIRE(settled);
  CHECK(fx.count("state = 'sent'") == rows_total);  // 12 attempts outlast this endpoint's failure rate

  std::size_t duplicates = 0, explained = 0, never = 0;
  {
    std::lock_guard lock(endpoint.mutex);
    const auto keys = fx.db.query("SELECT idempotency_key FROM event_delivery");
    for (int i = 0; i < keys.rows(); ++i) never += endpoint.accepted.contains(std::string(keys.text(i, 0))) ? 0 : 1;
    for (const auto& [key, times] : endpoint.accepted) {
      if (times < 2) continue;
      ++duplicates;
      explained += killed_in_flight.contains(key) ? 1 : 0;
    }
  }
  MESSAGE("chaos: " << rows_total << " rows, " << terminations << " backend terminations, restart "
                    << std::string(restarted ? "yes" : "no") << ", SIGKILLed with " << killed_in_flight.size()
                    << " rows in flight; accepted twice: " << duplicates << " (" << explained
                    << " explained by the SIGKILL)");
  CHECK(never == 0);
  CHECK(duplicates == explained);  // none from a database fault
  CHECK(duplicates <= killed_in_flight.size());
  for (auto* d : dispatchers) {
    if (d == dispatchers[0]) continue;
    CHECK(d->running());
    d->signal(SIGTERM);
  }
  for (auto* d : dispatchers) {
    if (d != dispatchers[0]) CHECK(d->wait_exit(20s) == 0);
  }
}

}  // namespace chaos_e2e

// A destination that is slow but healthy must still get rows as fast as its
// concurrency allows: backpressure must not turn into claim / give back / wait
// cycles that leave its connections idle.
#include <doctest/doctest.h>

#include <csignal>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace backpressure_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::response_plan;
using steady = std::chrono::steady_clock;

TEST_CASE("a destination at its concurrency limit is fed at its own pace") {
  e2e_fixture fx;
  constexpr int rows = 600;
  constexpr int concurrency = 4;
  constexpr auto latency = 20ms;
  // At best rows / concurrency * latency = 3 s; allow three times that.
  constexpr auto ideal = rows / concurrency * latency;
  fx.server.set_fallback([](const auto&) { return response_plan::reply(200).after(latency); });
  auto& d = fx.start_dispatcher({{"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", std::to_string(concurrency)}});
  REQUIRE(d.wait_for_log("listening for new rows", 15s));

  const auto started = steady::now();
  fx.db.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', jsonb_build_object('lead', g)) "
      "FROM generate_series(1, $1::int) AS g",
      {std::to_string(rows)});
  const bool done = eventually([&] { return fx.count("state = 'sent'") == rows; }, 3 * ideal);
  const double took = std::chrono::duration<double>(steady::now() - started).count();
  const long long sent = fx.count("state = 'sent'");
  const long long given_back = fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome <> 'delivered'");
  MESSAGE(rows << " rows to one destination (concurrency " << concurrency << ", " << latency.count()
               << " ms per request, so " << std::chrono::duration<double>(ideal).count() << " s at best): " << sent
               << " sent after " << took << " s; " << given_back << " attempt-log rows other than 'delivered'");
  CHECK(done);
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == rows; }, 60s));  // it does finish
  d.signal(SIGTERM);
  CHECK(d.wait_exit(10s) == 0);
}

}  // namespace backpressure_e2e

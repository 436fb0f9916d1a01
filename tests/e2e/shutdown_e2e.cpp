// SIGTERM with requests in flight: the dispatcher stops claiming, lets the
// requests finish within OUTBOX_SHUTDOWN_GRACE_SECONDS, gives back what is still
// hanging after that, and exits 0. Nothing is left in `sending`.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace shutdown_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::response_plan;
using steady = std::chrono::steady_clock;

namespace {

void enqueue_range(const e2e_fixture& fx, long long from, long long to) {
  fx.db.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', jsonb_build_object('lead', g)) "
      "FROM generate_series($1::bigint, $2::bigint) AS g",
      {std::to_string(from), std::to_string(to)});
}

double seconds_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

TEST_CASE("SIGTERM while the server answers within the grace period: requests finish, exit 0 at once") {
  e2e_fixture fx;
  fx.server.set_fallback([](const auto&) { return response_plan::reply(200).after(1000ms); });
  auto& d = fx.start_dispatcher({{"OUTBOX_SHUTDOWN_GRACE_SECONDS", "5"}});
  REQUIRE(d.wait_for_log("listening for new rows", 15s));
  enqueue_range(fx, 1, 8);
  REQUIRE(fx.server.wait_for_requests(8, 10s));

  const auto term = steady::now();
  d.signal(SIGTERM);
  REQUIRE(d.wait_for_log("stop requested", 5s));
  // Inserted after the stop: must not be claimed any more.
  const auto late = fx.enqueue(100);
  const auto status = d.wait_exit(5s + 3s);
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  const double took = seconds_between(term, *d.exited_at());
  MESSAGE("SIGTERM with 8 requests in flight (server answers after 1 s, grace 5 s): exited after " << took << " s");
  CHECK(took < 3.0);  // the answers came after about 1 s; it did not sit out the grace period

  CHECK(fx.count("lead_project_id < 100 AND state = 'sent'") == 8);
  CHECK(fx.count("state = 'sending'") == 0);
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'delivered'") == 8);
  CHECK(fx.count("state = 'pending' AND attempts = 0 AND id = " + std::to_string(late)) == 1);
  CHECK(fx.server.request_count() == 8);
  CHECK(d.count_in_logs("dispatcher stopped") == 1);
}

TEST_CASE("SIGTERM while the server hangs past the grace period: exit 0 after the grace, rows back to pending") {
  e2e_fixture fx;
  constexpr std::size_t rows = 4;
  constexpr std::size_t hung = 2;  // the destination's concurrency: the other rows wait for a slot
  fx.server.script(std::vector<response_plan>(hung, response_plan::hang()));  // then 200 for the retries
  // The request deadline (10 s) is well past the grace (2 s): only the shutdown can end them.
  const environment extra{{"OUTBOX_SHUTDOWN_GRACE_SECONDS", "2"},
                          {"OUTBOX_REQUEST_TIMEOUT_MS", "10000"},
                          {"OUTBOX_LEASE_SECONDS", "29"},  // 2 x (1 + 1 + 10) s + 5 s
                          {"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", std::to_string(hung)}};
  auto& d = fx.start_dispatcher(extra, "dispatcher-hung");
  REQUIRE(d.wait_for_log("listening for new rows", 15s));
  enqueue_range(fx, 1, rows);
  REQUIRE(fx.server.wait_for_requests(hung, 10s));
  REQUIRE(eventually([&] { return fx.count("state = 'sending'") == static_cast<long long>(rows); }, 5s));

  const auto term = steady::now();
  d.signal(SIGTERM);
  const auto status = d.wait_exit(2s + 6s);
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  const double took = seconds_between(term, *d.exited_at());
  MESSAGE("SIGTERM with " << hung << " hung requests and " << rows - hung << " rows waiting (grace 2 s): exited after "
                          << took << " s");
  CHECK(took >= 1.9);  // it gave the requests their grace period
  CHECK(took < 2.0 + 2.0);
  CHECK(fx.server.request_count() == hung);  // the waiting rows were not sent during the grace period

  // Given back at once, not left to a lease that would run for 29 s.
  CHECK(fx.count("state = 'sending'") == 0);
  // (A settled row keeps the token of the attempt it recorded; only the expiry says "leased".)
  CHECK(
      fx.count("state = 'pending' AND lease_expires_at IS NULL AND lease_owner IS NULL AND next_attempt_at <= now()") ==
      static_cast<long long>(rows));
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'abandoned'") ==
        static_cast<long long>(hung));
  // Rows that never started go back without an attempts-log row: nothing was attempted.
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'released'") == 0);
  CHECK(fx.count("attempts = 0") == static_cast<long long>(rows - hung));
  CHECK(d.count_in_logs("grace period over: settling requests still in flight") == 1);

  // The next dispatcher sends them all, the hung ones again under the same keys with the same bodies.
  auto& next = fx.start_dispatcher(extra, "dispatcher-next");
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == static_cast<long long>(rows); }, 15s));
  const auto requests = fx.server.requests();
  REQUIRE(requests.size() == hung + rows);
  for (std::size_t i = 0; i < hung; ++i) {
    const auto& first = requests[i];
    const auto again = std::find_if(requests.begin() + static_cast<long>(hung), requests.end(), [&](const auto& r) {
      return r.header("webhook-id") == first.header("webhook-id");
    });
    REQUIRE(again != requests.end());
    CHECK(again->body == first.body);
  }
  next.signal(SIGTERM);
  CHECK(next.wait_exit(10s) == 0);
}

}  // namespace shutdown_e2e

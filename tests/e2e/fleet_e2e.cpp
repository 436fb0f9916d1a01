// Issue 12, stumbles 2 and 3, through the real binary: a destination that
// stopped is visible (delivery lag, the dispatcher's heartbeat with its
// automatic pause), `dispatcher resume` lifts an automatic pause ("retry now"),
// and `dispatcher pause` checks its names and takes effect at once.
#include <doctest/doctest.h>

#include <csignal>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace fleet_e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::response_plan;

TEST_CASE("fleet: a destination the dispatcher paused by itself shows in status and metrics; resume retries now") {
  e2e_fixture fx;
  fx.server.script({response_plan::reply(401, R"({"error":"bad token"})")});  // then the fallback answers 2xx
  const auto port = outbox::test::free_local_port();
  auto& d = fx.start_dispatcher(
      {{"OUTBOX_SWEEP_INTERVAL_SECONDS", "1"}, {"OUTBOX_METRICS_ADDRESS", "127.0.0.1:" + std::to_string(port)}});
  const auto id = fx.enqueue(1301);
  REQUIRE(d.wait_for_log("destination paused after a destination-wide failure", 15s));

  // The row waits in the future: nothing is "due", but the lag shows it.
  json status;
  REQUIRE(eventually(
      [&] {
        const auto r = fx.cli({"status", "--json"});
        status = json::parse(r.output, nullptr, false);
        if (status.is_discarded() || !status.contains("dispatchers") || status["dispatchers"].empty()) return false;
        return !status["dispatchers"][0]["automatic_pauses"].empty();
      },
      15s));
  const auto& me = status["dispatchers"][0];
  CHECK(me["live"] == true);
  CHECK(me["automatic_pauses"][0]["provider"] == "webhook");
  CHECK(me["automatic_pauses"][0]["destination"] == "default");
  REQUIRE(status["delivery_lag"].size() == 1);
  CHECK(status["delivery_lag"][0]["seconds"].get<double>() >= 0);
  const auto text = fx.cli({"status"});
  CHECK(text.output.find("paused by itself: webhook/default since 20") != std::string::npos);
  CHECK(me["automatic_pauses"][0]["since"].get<std::string>().ends_with("Z"));  // when it stopped delivering
  const auto metrics_text = outbox::test::scrape_metrics(port);
  const std::string since_series =
      "outbox_destination_paused_since_timestamp_seconds{provider=\"webhook\",destination=\"default\"} ";
  const auto since_at = metrics_text.find(since_series);
  REQUIRE(since_at != std::string::npos);
  CHECK(std::stod(metrics_text.substr(since_at + since_series.size())) > 1.7e9);  // a Unix time, not 0
  CHECK(text.output.find("delivery lag (oldest pending or sending row, by created_at):") != std::string::npos);
  CHECK(outbox::test::scrape_metrics(port).find(
            "outbox_delivery_lag_seconds{provider=\"webhook\",destination=\"default\"}") != std::string::npos);

  // Fault: every connection of the dispatcher is killed just before on-call acts;
  // the notification may be lost with the listener, the sweep still sees the request.
  fx.db.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
      "AND application_name LIKE 'outbox-dispatcher %' "
      "AND application_name NOT LIKE 'outbox-dispatcher resume%' AND application_name NOT LIKE "
      "'outbox-dispatcher status%'");

  // The 60 s automatic pause is lifted at once by on-call.
  const auto resumed = fx.cli({"resume", "webhook", "default"});
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.output.find("automatic pause lifted on 1 dispatcher(s) (retry now)") != std::string::npos);
  REQUIRE(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 10s));
  CHECK(d.logs().find("automatic pause lifted by on-call (retry now)") != std::string::npos);

  // Nothing paused any more (once the heartbeat says so): resume says so and fails.
  REQUIRE(eventually(
      [&] {
        const auto s = json::parse(fx.cli({"status", "--json"}).output, nullptr, false);
        return !s.is_discarded() && s["dispatchers"][0]["automatic_pauses"].empty();
      },
      10s));
  const auto again = fx.cli({"resume", "webhook", "default"});
  CHECK(again.exit_code == 1);
  CHECK(again.output.find("webhook/default was not paused") != std::string::npos);
}

TEST_CASE("fleet: pause checks provider and destination names, and takes effect at once on a listening dispatcher") {
  e2e_fixture fx;
  // A sweep interval of an hour: only the notification can make the pause take effect.
  auto& d = fx.start_dispatcher({{"OUTBOX_SWEEP_INTERVAL_SECONDS", "3600"}});
  REQUIRE(d.wait_for_log("listening for new rows", 15s));
  // Known once the dispatcher has recorded its destinations' policy (at start).
  std::string last;
  REQUIRE_MESSAGE(eventually(
                      [&] {
                        const auto r = fx.cli({"pause", "webhook", "default"});
                        last = r.output;
                        return r.exit_code == 0;
                      },
                      15s),
                  last);
  REQUIRE(d.wait_for_log("destination paused by on-call", 5s));

  const auto typo = fx.cli({"pause", "webhook", "defualt"});
  CHECK(typo.exit_code == 2);
  CHECK(typo.output.find("no dispatcher has configured webhook/defualt") != std::string::npos);
  const auto kind = fx.cli({"pause", "webhok", "default"});
  CHECK(kind.exit_code == 2);
  CHECK(kind.output.find("unknown provider 'webhok'") != std::string::npos);
  CHECK(fx.cli({"pause", "webhook", "defualt", "--force"}).exit_code == 0);

  const auto resumed = fx.cli({"resume", "webhook", "default"});
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.output.find("webhook/default resumed (on-call pause lifted)") != std::string::npos);
  REQUIRE(d.wait_for_log("destination resumed by on-call", 5s));
}

TEST_CASE("fleet: a dispatcher stopped cleanly leaves status and resume at once; a killed one is counted apart") {
  e2e_fixture fx;
  fx.server.script({response_plan::reply(401, R"({"error":"bad token"})")});
  auto& d = fx.start_dispatcher({{"OUTBOX_SWEEP_INTERVAL_SECONDS", "1"}});
  (void)fx.enqueue(1351);
  REQUIRE(d.wait_for_log("destination paused after a destination-wide failure", 15s));
  REQUIRE(eventually([&] { return fx.db.scalar("SELECT count(*) FROM outbox_dispatcher_heartbeat") == 1; }, 15s));
  d.signal(SIGTERM);
  REQUIRE(d.wait_exit(30s) == 0);
  // Gone as it exits, not 3 sweep intervals later: on-call's resume right after a restart counts no ghost.
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_dispatcher_heartbeat") == 0);
  const auto status = fx.cli({"status"});
  CHECK(status.output.find("dispatchers: none is running (no live heartbeat)") != std::string::npos);
  CHECK(status.output.find("paused by itself") == std::string::npos);
  const auto resumed = fx.cli({"resume", "webhook", "default"});
  CHECK(resumed.output.find("lifted on 1 dispatcher(s)") == std::string::npos);

  // A killed one says no goodbye: its heartbeat ages out and status counts it apart.
  auto& killed = fx.start_dispatcher({{"OUTBOX_SWEEP_INTERVAL_SECONDS", "1"}});
  REQUIRE(eventually([&] { return fx.db.scalar("SELECT count(*) FROM outbox_dispatcher_heartbeat") == 1; }, 15s));
  killed.kill();
  (void)killed.wait_exit(10s);
  REQUIRE(eventually(
      [&] {
        return fx.cli({"status"}).output.find("1 more stopped beating without a clean stop") != std::string::npos;
      },
      15s));
}

}  // namespace fleet_e2e

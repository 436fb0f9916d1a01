// A destination's health as the engine keeps it, in virtual time: the circuit
// breaker, a destination-wide refusal (401), on-call pauses and resume.
#include <doctest/doctest.h>

#include "db/fleet_store.hpp"
#include "tests/support/engine_rig.hpp"

namespace engine_destinations_test {

using namespace std::chrono_literals;
using outbox::test::engine_rig;
using outbox::test::scripted_answer;

namespace {

void add_webhook(outbox::environment& env, const std::string& name) {
  env["OUTBOX_DEST__WEBHOOK__" + name + "__URL"] = "https://healthy.test/hook";
  env["OUTBOX_DEST__WEBHOOK__" + name + "__SECRET"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
}

std::size_t sent_to(const engine_rig& rig, const std::string& host) {
  std::size_t n = 0;
  for (const auto& s : rig.http.sent) n += s.request.url.find(host) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("engine destinations: an open circuit stops claiming the destination; others go on") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY"] = "1";
    add_webhook(env, "HEALTHY");
  });
  rig.http.fallback = scripted_answer::reply(500, R"({"error":"down"})");
  rig.start();
  for (int lead = 1; lead <= 20; ++lead) rig.enqueue(lead);
  REQUIRE(rig.run_until([&] { return rig.logs().find("destination circuit opened") != std::string::npos; }));
  rig.http.fallback = scripted_answer::reply(200);  // the healthy one answers; the default's circuit is open
  const auto healthy = rig.enqueue(500, "Lead", "{}", "healthy");
  REQUIRE(rig.run_until_state(healthy, "sent"));
  // 20 s on, still inside the 30 s the circuit stays open: nothing more went to the failing destination.
  (void)rig.run_until([] { return false; }, 20s);
  CHECK(sent_to(rig, "hooks.test") == 5);  // the threshold
  std::size_t logged = 0;
  for (const auto id : rig.store.ids()) logged += rig.store.attempts(id).size();
  CHECK(logged == 6);  // the five failures and the healthy delivery: rows put back leave no attempt rows
  // Once the circuit's pause is over, one row probes it, and the rest follow.
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 21; }, 120s));
  CHECK(rig.logs().find("destination probe succeeded; resuming") != std::string::npos);
}

TEST_CASE("engine destinations: a 401 pauses the destination without burning the row's attempts") {
  engine_rig rig;
  rig.http.fallback = scripted_answer::reply(401, R"({"error":"bad token"})");
  rig.start();
  const auto first = rig.enqueue(16);
  REQUIRE(rig.run_until([&] { return !rig.row(first).last_error.empty(); }));
  CHECK(rig.row(first).state == "pending");
  CHECK(rig.row(first).attempts == 0);
  CHECK(rig.row(first).last_error.find("401") != std::string::npos);
  CHECK(rig.logs().find("destination paused") != std::string::npos);
  // A new row for the paused destination is not even claimed.
  const auto second = rig.enqueue(17);
  (void)rig.run_until([] { return false; }, 30s);
  CHECK(rig.http.sent.size() == 1);
  CHECK(rig.row(second).attempts == 0);
  CHECK(rig.store.attempts(second).empty());
  // After the 60 s pause one row probes; still refused, it stays paused.
  REQUIRE(rig.run_until([&] { return rig.http.sent.size() == 2; }, 60s));
  CHECK(rig.logs().find("destination probe failed; staying paused") != std::string::npos);
}

TEST_CASE("engine destinations: an on-call pause holds rows without requests; resume sends them at once") {
  engine_rig rig([](auto& env) { env["OUTBOX_WAKE_MODE"] = "listen"; });
  rig.store.pause("webhook", "default", "provider incident");
  rig.start();
  const auto id = rig.enqueue(18);
  (void)rig.run_until([] { return false; }, 30s);
  CHECK(rig.http.sent.empty());
  CHECK(rig.row(id).attempts == 0);
  CHECK(rig.row(id).updated_at == rig.row(id).created_at);  // never touched while paused
  CHECK(rig.store.calls("claim") > 0);
  // What `dispatcher resume` does: the pause goes, and a notification says so.
  rig.store.resume("webhook", "default");
  rig.store.notify(std::string(outbox::db::pauses_changed_payload));
  const auto resumed_at = rig.clock.steady_now();
  REQUIRE(rig.run_until_state(id, "sent"));
  CHECK(rig.clock.steady_now() - resumed_at < 1s);  // not the poll interval, not a sweep
}

TEST_CASE("engine destinations: 4xx answers over MAX_4XX_SHARE pause the destination for on-call") {
  engine_rig rig([](auto& env) {
    env["OUTBOX_DEST__WEBHOOK__DEFAULT__MAX_4XX_SHARE"] = "0.2";
    env["OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY"] = "1";
  });
  // Every third request is refused: a third of the answers, over the 20 % allowed.
  rig.http.fallback = scripted_answer::reply(200);
  for (int i = 0; i < 300; ++i) {
    rig.http.script.push_back(i % 3 == 2 ? scripted_answer::reply(422, R"({"error":"bad"})")
                                         : scripted_answer::reply(200));
  }
  rig.start();
  for (int lead = 1; lead <= 300; ++lead) rig.enqueue(lead);
  REQUIRE(rig.run_until([&] { return rig.logs().find("too many 4xx answers") != std::string::npos; }));
  const auto paused_after = rig.http.sent.size();
  CHECK(paused_after >= 100);  // not judged on fewer requests than the window's minimum
  CHECK(paused_after < 110);
  (void)rig.run_until([] { return false; }, std::chrono::seconds(std::chrono::minutes(10)));
  CHECK(rig.http.sent.size() == paused_after);  // paused for 15 minutes
  CHECK(rig.store.count("pending") > 150);
}

TEST_CASE(
    "engine destinations: an API version near its sunset is named in the log and the metrics, by the engine's clock") {
  // The rig's clock reads 2027-01-15; Meta retires v25.0 on 2027-02-23, inside the 60-day warning.
  engine_rig rig([](auto& env) {
    env["OUTBOX_DEST__META__DEFAULT__PIXEL_ID"] = "1234567890";
    env["OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN"] = "meta-token";
    env["OUTBOX_DEST__META__DEFAULT__API_VERSION"] = "v25.0";
  });
  rig.start();
  CHECK(rig.logs().find("API version near its sunset") != std::string::npos);
  const auto view = rig.metrics().destinations.at({"meta", "default"});
  CHECK(view.api_sunset_warning.find("v25.0") != std::string::npos);
  CHECK(view.api_sunset_seconds > 0);
  CHECK(view.api_sunset_seconds < 60.0 * 86400);
  // Past the sunset (the engine stopped, so time can jump 40 days at once).
  rig.stop();
  rig.clock.advance(std::chrono::hours(24 * 40));
  CHECK(rig.metrics().destinations.at({"meta", "default"}).api_sunset_seconds < 0);
}

// The claim steps over a paused destination's rows in one ordered scan while they
// are few (a scan per destination costs more with many destinations), and goes
// destination by destination once they are many (claimer.cpp, few_rows_in).
TEST_CASE("engine destinations: a paused backlog is stepped over while small, claimed around once large") {
  for (const int paused_rows : {50, 2100}) {
    CAPTURE(paused_rows);
    engine_rig rig([](auto& env) {
      add_webhook(env, "HELD");
      env["OUTBOX_DEST__WEBHOOK__HELD__PAUSED"] = "true";
    });
    rig.http.fallback = scripted_answer::reply(200);
    for (int lead = 1; lead <= paused_rows; ++lead) rig.enqueue(lead, "Lead", "{}", "held");
    rig.start();
    // The backlog read comes with the first claims: a row enqueued after it is claimed knowing the counts.
    REQUIRE(rig.run_until([&] { return rig.metrics().backlog_rows.has_value(); }));
    const auto id = rig.enqueue(100000);
    REQUIRE(rig.run_until_state(id, "sent"));
    const auto& last = rig.store.claim_requests.back();
    CHECK(last.skip_destinations == std::vector<std::string>{"webhook/held"});
    // 2,000 rows and 40 a destination with unsent rows (here two): 2,100 is over.
    CHECK(last.few_skipped_rows == (paused_rows <= 2080));
    CHECK(rig.store.count("sent") == 1);
  }
}

}  // namespace engine_destinations_test

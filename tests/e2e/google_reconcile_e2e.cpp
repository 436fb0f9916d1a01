// Google Data Manager status checks live in the database (provider_request), not
// in a dispatcher's memory: the real dispatcher is SIGKILLed once before any
// check and once in the middle of reconciliation, and the next one picks the
// checks up where they were. Read counts show that no check was lost or repeated;
// /metrics counts the reconciled rows by status.
//
// Each dispatcher looks for due requests when it starts and then every
// OUTBOX_STATUS_POLL_SECONDS (default 60 s, longer than this test): every read
// below is a start-up round, so what each process did is known exactly.
#include <doctest/doctest.h>

#include <csignal>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_google.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_reconcile_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::fake_google;
using outbox::test::status_answer;

namespace {

environment data_manager(const fake_google& g) {
  const std::string p = "OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__";
  return {{p + "ACCOUNT_ID", "1234567890"},
          {p + "CONVERSION_ACTION_ID", "987654"},
          {p + "CLIENT_ID", std::string(fake_google::client_id)},
          {p + "CLIENT_SECRET", std::string(fake_google::client_secret)},
          {p + "REFRESH_TOKEN", std::string(fake_google::refresh_token)},
          {p + "TOKEN_URL", g.token_url()},
          {p + "BASE_URL", g.base_url()},
          {p + "BATCH_SIZE", "2"},
          {p + "STATUS_CHECK_DELAY_SECONDS", "1"}};
}

long long requests_where(const e2e_fixture& fx, const std::string& where) {
  return fx.db.scalar("SELECT count(*) FROM provider_request WHERE " + where);
}

bool killed(outbox::test::dispatcher_process& d) {
  d.kill();
  return d.wait_exit(10s) == 128 + SIGKILL;
}

}  // namespace

TEST_CASE("google_data_manager: status checks survive SIGKILLed dispatchers, exactly one read per answer") {
  e2e_fixture fx;
  fake_google google(fx.pki.trusted);
  // Requests of two rows each: PROCESSING at the first read, then final.
  google.statuses().script_next(
      {status_answer::processing(), status_answer::partial_success({{"PROCESSING_ERROR_REASON_INVALID_GCLID", 1}})});
  google.statuses().script_next({status_answer::processing(), status_answer::success()});
  for (int lead = 1; lead <= 4; ++lead) {
    fx.enqueue(lead, "Purchase",
               nlohmann::json{{"event_time", "2026-09-20T14:03:00Z"}, {"gclid", "G-" + std::to_string(lead)}}.dump(),
               "google_data_manager");
  }
  const auto env = data_manager(google);

  // 1. Delivered, then killed before any status check was due at one of its rounds.
  auto& first = fx.start_dispatcher(env, "first");
  REQUIRE_MESSAGE(eventually([&] { return fx.count("state = 'sent'") == 4; }, 30s), fx.diagnostics());
  REQUIRE(requests_where(fx, "status = 'PENDING'") == 2);
  REQUIRE(killed(first));
  CHECK(google.statuses().total_reads() == 0);

  // 2. The next one checks them at start (PROCESSING) and is killed too.
  REQUIRE(eventually([&] { return requests_where(fx, "next_check_at <= now()") == 2; }, 10s));
  auto& second = fx.start_dispatcher(env, "second");
  REQUIRE_MESSAGE(eventually([&] { return requests_where(fx, "status = 'PROCESSING' AND checks = 1") == 2; }, 30s),
                  fx.diagnostics());
  REQUIRE(killed(second));
  CHECK(google.statuses().total_reads() == 2);

  // 3. The third one reads the final statuses.
  REQUIRE(eventually([&] { return requests_where(fx, "next_check_at <= now()") == 2; }, 10s));
  const auto port = outbox::test::free_local_port();
  auto with_metrics = env;
  with_metrics["OUTBOX_METRICS_ADDRESS"] = "127.0.0.1:" + std::to_string(port);
  auto& third = fx.start_dispatcher(with_metrics, "third");
  REQUIRE_MESSAGE(
      eventually([&] { return requests_where(fx, "status IN ('SUCCESS', 'PARTIAL_SUCCESS') AND checks = 2") == 2; },
                 30s),
      fx.diagnostics());
  for (const auto& id : google.statuses().request_ids()) CHECK(google.statuses().reads(id) == 2);
  CHECK(google.statuses().total_reads() == 4);
  CHECK(requests_where(fx,
                       "status = 'PARTIAL_SUCCESS' AND row_count = 2 AND detail LIKE "
                       "'%errors: 1 PROCESSING_ERROR_REASON_INVALID_GCLID%'") == 1);
  CHECK(requests_where(fx, "status = 'SUCCESS' AND row_count = 2 AND detail = '2 ingested'") == 1);
  CHECK(fx.count("state = 'sent' AND attempts = 1") == 4);  // the rows were never sent again

  // Counted once, by the process that read the final status.
  const std::string series =
      R"(outbox_provider_status_rows_total{provider="google_data_manager",destination="default",)";
  REQUIRE(third.wait_for_log("serving /metrics", 15s));
  std::string text;
  CHECK_MESSAGE(eventually(
                    [&] {
                      text = outbox::test::scrape_metrics(port);
                      return text.find(series + R"(status="SUCCESS"} 2)") != std::string::npos &&
                             text.find(series + R"(status="PARTIAL_SUCCESS"} 2)") != std::string::npos;
                    },
                    10s),
                text);
  third.signal(SIGTERM);
  CHECK(third.wait_exit(15s) == 0);
}

}  // namespace google_reconcile_e2e

// The reconciler in virtual time: Data Manager accepts a request, processes it
// later, and the engine reads its status 30 minutes after acceptance, then at
// widening intervals until a final answer; hours pass in milliseconds.
#include <doctest/doctest.h>

#include <string>

#include "tests/support/engine_rig.hpp"

namespace engine_reconciler_test {

using namespace std::chrono_literals;
using outbox::engine_clock;
using outbox::test::engine_rig;
using outbox::test::scripted_answer;

namespace {

void data_manager(outbox::environment& env) {
  const std::string p = "OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__";
  env[p + "CLIENT_ID"] = "client.apps.googleusercontent.com";
  env[p + "CLIENT_SECRET"] = "client-secret";
  env[p + "REFRESH_TOKEN"] = "refresh-token";
  env[p + "TOKEN_URL"] = "https://oauth.test/token";
  env[p + "BASE_URL"] = "https://datamanager.test";
  env[p + "ACCOUNT_ID"] = "1234567890";
  env[p + "CONVERSION_ACTION_ID"] = "987654";
  env["OUTBOX_POLL_INTERVAL_MS"] = "60000";
  env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "60";
}

std::string status_body(const std::string& status) {
  nlohmann::json entry{{"destination", nlohmann::json::object()}, {"requestStatus", status}};
  if (status == "SUCCESS") entry["eventsIngestionStatus"] = {{"recordCount", "1"}};
  return nlohmann::json{{"requestStatusPerDestination", nlohmann::json::array({entry})}}.dump();
}

}  // namespace

TEST_CASE("engine reconciler: a processing request is read 30 min after acceptance, then at widening intervals") {
  engine_rig rig(data_manager);
  std::vector<engine_clock::steady_time> reads;
  int processing_reads = 3;
  rig.http.route = [&](const outbox::providers::http_request& r) -> std::optional<scripted_answer> {
    if (r.url.find("/token") != std::string::npos) {
      return scripted_answer::reply(200, R"({"access_token":"ya29.virtual","expires_in":3600,"token_type":"Bearer"})");
    }
    if (r.url.find(":ingest") != std::string::npos) return scripted_answer::reply(200, R"({"requestId":"req-1"})");
    if (r.url.find("requestStatus:retrieve") != std::string::npos) {
      reads.push_back(rig.clock.steady_now());
      return scripted_answer::reply(200, status_body(processing_reads-- > 0 ? "PROCESSING" : "SUCCESS"));
    }
    return std::nullopt;
  };
  rig.start();
  const auto id = rig.enqueue(1, "Purchase", R"({"event_time": "2027-01-15T07:00:00Z", "gclid": "G-1"})", "default",
                              "google_data_manager");
  REQUIRE(rig.run_until_state(id, "sent"));
  const auto accepted = rig.clock.steady_now();
  REQUIRE(rig.run_until([&] { return rig.store.request_status("req-1").first == "SUCCESS"; },
                        std::chrono::seconds(std::chrono::hours(12))));
  REQUIRE(reads.size() == 4);
  // 30 min after acceptance (the status poll runs every minute), then 30 min, 1 h, 2 h apart.
  CHECK(reads[0] - accepted >= 30min);
  CHECK(reads[0] - accepted <= 32min);
  CHECK(reads[1] - reads[0] >= 30min);
  CHECK(reads[2] - reads[1] >= 60min);
  CHECK(reads[3] - reads[2] >= 120min);
  CHECK(reads[3] - reads[2] <= 122min);
  CHECK(rig.store.request_status("req-1").second == 4);
  CHECK(rig.logs().find("provider processed the request") != std::string::npos);
}

}  // namespace engine_reconciler_test

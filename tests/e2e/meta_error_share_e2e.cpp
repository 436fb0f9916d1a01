// Meta's access tier watches the app's error share (below 15 % of its last 500
// requests): a Meta destination whose 4xx share crosses MAX_4XX_SHARE (10 % by
// default) pauses itself with that reason, in status, and on-call's `resume`
// sends the rest. One event per request (BATCH_SIZE=1), a fifth of them poison.
#include <doctest/doctest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_meta.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace meta_error_share_e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST_CASE("meta 4xx share: over 10 % of the last requests refused pauses the destination; resume sends the rest") {
  e2e_fixture fx;
  const outbox::test::fake_meta meta;
  meta.install(fx.server);
  const std::string url = fx.env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  const outbox::environment env{{"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", "1234567890"},
                                {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", "meta-good-token"},
                                {"OUTBOX_DEST__META__DEFAULT__BASE_URL", url.substr(0, url.rfind('/'))},
                                {"OUTBOX_DEST__META__DEFAULT__BATCH_SIZE", "1"},
                                {"OUTBOX_DEST__META__DEFAULT__CONCURRENCY", "1"},
                                {"OUTBOX_SWEEP_INTERVAL_SECONDS", "1"}};
  constexpr int rows = 150;
  for (int i = 0; i < rows; ++i) {
    const bool poison = i % 5 == 0;
    fx.enqueue(5000 + i, "Lead",
               json{{"event_time", unix_now() - 60},
                    {"email", "lead" + std::to_string(i) + "@example.com"},
                    {"order_id", poison ? "poison" : "order-" + std::to_string(i)}}
                   .dump(),
               "meta");
  }
  auto& d = fx.start_dispatcher(env);
  REQUIRE(d.wait_for_log("destination paused: too many 4xx answers", 30s));
  // Judged once 100 requests are in: the 100th (about 20 refused) crosses 10 %.
  const auto at_pause = meta.requests().size();
  CHECK(at_pause == 100);
  // Rows claimed but still waiting for the one slot go back to pending.
  CHECK(eventually([&] { return fx.count("state = 'pending'") == rows - 100; }, 10s));
  std::string status;
  CHECK(eventually(
      [&] {
        status = fx.cli({"status"}).output;
        return status.find("paused by itself: meta/default") != std::string::npos;
      },
      15s));
  CHECK(status.find("of the last 100 requests") != std::string::npos);
  CHECK(status.find("exceed MAX_4XX_SHARE 10 %: paused to spare the app's error budget") != std::string::npos);
  CHECK(meta.requests().size() == at_pause);  // nothing more was sent while paused

  const auto resumed = fx.cli({"resume", "meta", "default"}, env);
  CHECK(resumed.exit_code == 0);
  REQUIRE(eventually([&] { return fx.count("state IN ('pending', 'sending')") == 0; }, 30s));
  CHECK(fx.count("state = 'sent'") == rows - rows / 5);
  CHECK(fx.count("state = 'dead'") == rows / 5);
  for (const auto& id : meta.accepted_event_ids()) CHECK(meta.times_accepted(id) == 1);
  CHECK(meta.accepted_event_ids().size() == static_cast<std::size_t>(rows - rows / 5));
  // After resume the count started again: the last 50 requests (10 refused, 20 %) are too few to judge.
  CHECK(meta.requests().size() == static_cast<std::size_t>(rows));
}

}  // namespace meta_error_share_e2e

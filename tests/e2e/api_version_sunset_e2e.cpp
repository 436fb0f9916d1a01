// A destination pinned to an API version near or past its sunset says so in the
// log at start, in /metrics (outbox_api_version_sunset_seconds), on the status
// page and in `dispatcher status`, with the version to move to. Meta's v24.0 was
// retired on 2026-11-10 (providers/api_versions.cpp), so the test stays true on
// any later date; the 60-day window itself is tested on the table.
#include <doctest/doctest.h>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace api_version_sunset_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;

outbox::environment meta_on(const std::string& version) {
  return {{"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", "1234567890"},
          {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", "meta-good-token"},
          {"OUTBOX_DEST__META__DEFAULT__API_VERSION", version}};
}

TEST_CASE("api version sunset: a retired Meta version is named in the log, /metrics and status") {
  e2e_fixture fx;
  const auto port = outbox::test::free_local_port();
  auto env = meta_on("v24.0");
  env["OUTBOX_METRICS_ADDRESS"] = "127.0.0.1:" + std::to_string(port);
  auto& d = fx.start_dispatcher(env);
  REQUIRE(d.wait_for_log("serving /metrics", 15s));
  CHECK(d.wait_for_log("API version v24.0 was retired on 2026-11-10; set api_version to v27.0", 5s));
  const auto text = outbox::test::scrape_metrics(port);
  const std::string series = "outbox_api_version_sunset_seconds{provider=\"meta\",destination=\"default\"} -";
  CHECK(text.find(series) != std::string::npos);  // negative: past
  // The webhook destination has no versioned API: no series for it.
  CHECK(text.find("outbox_api_version_sunset_seconds{provider=\"webhook\"") == std::string::npos);
  const auto page = outbox::test::http_get_local(port, "/status");
  CHECK(page.find("API version v24.0 was retired on 2026-11-10") != std::string::npos);

  const auto status = fx.cli({"status"}, meta_on("v24.0"));
  CHECK(status.exit_code == 0);
  CHECK(status.output.find("api versions:\n  meta/default: API version v24.0 was retired on 2026-11-10; set "
                           "api_version to v27.0") != std::string::npos);
}

TEST_CASE("api version sunset: the newest version gives no warning, and status says so") {
  e2e_fixture fx;
  const auto status = fx.cli({"status"}, meta_on("v27.0"));
  CHECK(status.exit_code == 0);
  CHECK(status.output.find("api versions: none of the configured destinations' versions ends within 60 days") !=
        std::string::npos);
}

}  // namespace api_version_sunset_e2e

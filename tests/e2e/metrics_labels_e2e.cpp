// Metric label values come from configuration, not from CRM rows: a row that
// names a provider or destination nobody configured is counted under
// provider="unknown", so a typo in the CRM cannot create a series forever.
#include <doctest/doctest.h>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace metrics_labels_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

TEST_CASE("finding 11: rows naming unknown providers or destinations fold into one metric label") {
  e2e_fixture fx;
  const auto port = outbox::test::free_local_port();
  auto& d = fx.start_dispatcher({{"OUTBOX_METRICS_ADDRESS", "127.0.0.1:" + std::to_string(port)}});
  REQUIRE(d.wait_for_log("serving /metrics", 15s));
  for (int i = 1; i <= 3; ++i) fx.enqueue(i, "Lead", R"({"value": 1})", "bogus_provider_" + std::to_string(i));
  REQUIRE(eventually([&] { return fx.count("state = 'dead'") == 3; }, 15s));
  const auto text = outbox::test::scrape_metrics(port);
  CHECK(text.find("bogus_provider") == std::string::npos);
  CHECK(text.find("outbox_deliveries_total{provider=\"unknown\",destination=\"unknown\",outcome=\"rejected\"} 3") !=
        std::string::npos);
}

}  // namespace metrics_labels_e2e

// `dispatcher status` with many destinations (a CRM with a pixel per project):
// a summary line counts them by state, each list shows its first 20, and
// --provider, --destination (a prefix with *) and --state narrow every list.
#include <doctest/doctest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace status_filter_e2e {

using outbox::test::e2e_fixture;

namespace {

std::string project(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "project_%02d", i);
  return name;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("status with 31 destinations: a summary first, 20 per list, filters by provider, name and state") {
  e2e_fixture fx;
  for (int i = 0; i < 30; ++i) {
    fx.db.query("SELECT enqueue_event_delivery($1, 'webhook', 'Lead', '{}'::jsonb, $2)",
                {std::to_string(i), project(i)});
  }
  fx.db.query("SELECT enqueue_event_delivery(40, 'meta', 'Lead', '{}'::jsonb, 'project_40')");
  fx.db.query("UPDATE event_delivery SET state = 'dead' WHERE destination = 'project_05'");
  REQUIRE(fx.cli({"pause", "webhook", "project_07", "--reason", "client asked"}).exit_code == 0);

  auto r = fx.cli({"status"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.output, "destinations: 31 with unsent rows (30 with rows due, 1 with dead rows), 1 paused by on-call"));
  CHECK(has(r.output, "  ... and 11 more: --provider, --destination, --state or --all"));
  // The summary comes before the lists.
  CHECK(r.output.find("destinations: 31") < r.output.find("provider    destination"));

  r = fx.cli({"status", "--all"});
  CHECK_FALSE(has(r.output, "more: --provider"));
  CHECK(has(r.output, "project_29"));

  r = fx.cli({"status", "--provider", "meta"});
  CHECK(has(r.output, "project_40"));
  CHECK_FALSE(has(r.output, "project_00"));
  CHECK(has(r.output, "destinations: 31 with unsent rows"));  // the summary stays whole

  r = fx.cli({"status", "--destination", "project_0*"});
  CHECK(has(r.output, "project_09"));
  CHECK_FALSE(has(r.output, "project_10"));

  r = fx.cli({"status", "--state", "paused"});
  CHECK(has(r.output, "webhook/project_07  since"));
  CHECK_FALSE(has(r.output, "project_08"));

  r = fx.cli({"status", "--state", "dead", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto s = nlohmann::json::parse(r.output);
  REQUIRE(s["by_destination"].size() == 1);
  CHECK(s["by_destination"][0]["destination"] == "project_05");
  CHECK(s["destinations_summary"]["with_dead"] == 1);
  CHECK(s["destinations_summary"]["paused"] == 1);
  CHECK(s["filter"]["state"] == "dead");

  r = fx.cli({"status", "--state", "sleepy"});
  CHECK(r.exit_code == 2);
  CHECK(has(r.output, "--state takes one of paused, automatic, circuit-open, unusable, due, dead, held"));
}

}  // namespace status_filter_e2e

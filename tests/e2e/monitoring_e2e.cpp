// What Prometheus and the on-call see of a running dispatcher (issue 12,
// stumble 8 and "a page to look at"): every series of every configured
// destination from the first scrape, /metrics clean under `promtool check
// metrics`, and /status in headless Chromium with a row per destination.
#include <doctest/doctest.h>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/external_tool.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace monitoring_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

namespace {

std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string{} : response.substr(end + 4);
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

// Four webhook destinations: `default` answers 200, `denied` 401 (the process
// pauses it), `broken` 500 (its circuit opens), `frozen` is PAUSED=true.
struct four_destinations {
  e2e_fixture fx;
  std::uint16_t port = outbox::test::free_local_port();
  outbox::test::dispatcher_process* d = nullptr;

  four_destinations() {
    fx.server.set_fallback([](const outbox::test::recorded_request& r) {
      if (r.target == "/broken") return outbox::test::response_plan::reply(500, "{\"error\":\"boom\"}");
      if (r.target == "/denied") return outbox::test::response_plan::reply(401, "{\"error\":\"bad signature\"}");
      return outbox::test::response_plan::reply(200);
    });
    outbox::environment extra{{"OUTBOX_METRICS_ADDRESS", "127.0.0.1:" + std::to_string(port)}};
    for (const char* name : {"BROKEN", "DENIED", "FROZEN"}) {
      const std::string prefix = std::string("OUTBOX_DEST__WEBHOOK__") + name + "__";
      std::string path = std::string("/") + name;
      for (auto& c : path) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      extra[prefix + "URL"] = fx.server.url(path, "localhost");
      extra[prefix + "SECRET"] = fx.secret();
    }
    extra["OUTBOX_DEST__WEBHOOK__FROZEN__PAUSED"] = "true";
    d = &fx.start_dispatcher(extra);
  }

  void enqueue(std::int64_t lead, const std::string& provider, const std::string& destination) {
    fx.db.query("SELECT enqueue_event_delivery($1, $2, 'Lead', '{\"value\": 1}'::jsonb, $3)",
                {std::to_string(lead), provider, destination});
  }

  // Rows for each destination, then waits until the process paused `denied` and opened `broken`'s circuit.
  void make_trouble() {
    for (int lead = 1; lead <= 2; ++lead) enqueue(lead, "webhook", "default");
    enqueue(10, "webhook", "denied");
    for (int lead = 20; lead < 25; ++lead) enqueue(lead, "webhook", "broken");
    enqueue(30, "webhook", "frozen");
    enqueue(40, "bogus_provider", "default");
    REQUIRE(eventually([&] { return fx.count("state = 'sent'") == 2; }, 20s));
    REQUIRE(d->wait_for_log("destination paused after a destination-wide failure", 20s));
    REQUIRE(d->wait_for_log("destination circuit opened", 30s));
    REQUIRE(eventually([&] { return fx.count("provider = 'bogus_provider' AND state = 'dead'") == 1; }, 20s));
  }
};

}  // namespace

TEST_CASE("stumble 8: the first scrape has every configured destination's series, at 0, and process metrics") {
  four_destinations t;
  REQUIRE(t.d->wait_for_log("serving /metrics", 15s));
  const auto text = body_of(outbox::test::scrape_metrics(t.port));
  INFO(text);
  for (const char* dest : {"default", "denied", "broken", "frozen"}) {
    const std::string labels = std::string("provider=\"webhook\",destination=\"") + dest + "\"";
    CAPTURE(labels);
    CHECK(has_line(text, "outbox_deliveries_total{" + labels + ",outcome=\"dead\"} 0"));
    CHECK(has_line(text, "outbox_deliveries_total{" + labels + ",outcome=\"delivered\"} 0"));
    CHECK(has_line(text, "outbox_requests_total{" + labels + "} 0"));
    CHECK(has_line(text, "outbox_match_key_events_total{" + labels + ",key=\"email\"} 0"));
    CHECK(has_line(text, "outbox_delivery_lag_seconds{" + labels + "} 0"));
  }
  CHECK(has_line(text, R"(outbox_destination_paused{provider="webhook",destination="default"} 0)"));
  CHECK(has_line(text, R"(outbox_destination_paused{provider="webhook",destination="frozen"} 1)"));
  CHECK(has_line(text, R"(outbox_rows{state="dead"} 0)"));
  CHECK(text.find("\noutbox_build_info{version=\"") != std::string::npos);
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
                           "process_start_time_seconds "}) {
    CAPTURE(name);
    CHECK(text.find(std::string("\n") + name) != std::string::npos);
  }
}

TEST_CASE("promtool check metrics finds nothing in a running dispatcher's /metrics, paused and failing included") {
  four_destinations t;
  REQUIRE(t.d->wait_for_log("serving /metrics", 15s));
  t.make_trouble();
  const auto text = body_of(outbox::test::scrape_metrics(t.port));
  INFO(text);
  CHECK(has_line(text, R"(outbox_deliveries_total{provider="webhook",destination="default",outcome="delivered"} 2)"));
  CHECK(has_line(text, R"(outbox_deliveries_total{provider="unknown",destination="unknown",outcome="rejected"} 1)"));
  CHECK(has_line(text, R"(outbox_destination_paused{provider="webhook",destination="denied"} 1)"));
  CHECK(has_line(text, R"(outbox_destination_paused{provider="webhook",destination="broken"} 1)"));
  CHECK(text.find("bogus_provider") == std::string::npos);
  const auto r = outbox::test::promtool_check_metrics(text);
  INFO(r.command << "\n" << r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out + r.err == "");
}

TEST_CASE("the status page of a running dispatcher in headless Chromium: a row per destination, in its state") {
  four_destinations t;
  REQUIRE(t.d->wait_for_log("serving /metrics", 15s));
  t.make_trouble();
  const auto dom = outbox::test::chromium_dump_dom("http://127.0.0.1:" + std::to_string(t.port) + "/status");
  INFO(dom.command);
  INFO(dom.err.substr(dom.err.size() > 2000 ? dom.err.size() - 2000 : 0));
  REQUIRE(dom.exit_code == 0);
  INFO(dom.out);
  for (const char* row : {R"~(data-provider="webhook" data-destination="default" data-state="delivering")~",
                          R"~(data-provider="webhook" data-destination="denied" data-state="paused (automatic)")~",
                          R"~(data-provider="webhook" data-destination="broken" data-state="circuit open")~",
                          R"~(data-provider="webhook" data-destination="frozen" data-state="paused")~",
                          R"~(data-provider="unknown" data-destination="unknown" data-state="not configured")~"}) {
    CAPTURE(row);
    CHECK(dom.out.find(row) != std::string::npos);
  }
  CHECK(dom.out.find("HTTP 401 from destination") != std::string::npos);  // why `denied` is paused
  CHECK(dom.out.find("paused by configuration") != std::string::npos);
  CHECK(dom.out.find("<td class=\"delivered\">2</td>") != std::string::npos);
  CHECK(dom.out.find(t.fx.secret()) == std::string::npos);
}

}  // namespace monitoring_e2e

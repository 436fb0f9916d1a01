// The /status page: its HTML from a metrics snapshot, the "last hour" window,
// escaping, and the page as headless Chromium (Debian's `chromium`) builds it
// when served by the real metrics server.
#include <doctest/doctest.h>

#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "dispatcher/ops/metrics_server.hpp"
#include "dispatcher/ops/status_page.hpp"
#include "providers/canonical_event.hpp"
#include "tests/support/external_tool.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace status_page_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using outbox::delivery_history;
using steady = std::chrono::steady_clock;
using sys_clock = std::chrono::system_clock;

namespace {

std::string rfc3339(sys_clock::time_point t) {
  return outbox::providers::format_rfc3339_utc(std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Four destinations in four states, one with an error that tries to inject markup,
// and rows that named no configured destination.
outbox::metrics sample_snapshot(sys_clock::time_point now) {
  outbox::metrics m;
  m.instance = "vm:4433:edc7556f";
  m.destinations[{"webhook", "default"}] = {"delivering", "", std::nullopt};
  m.destinations[{"tiktok", "default"}] = {"circuit open", "circuit open after 5 consecutive failures", now + 30s};
  m.destinations[{"meta", "pixel"}] = {"paused", "paused by alice@laptop: provider maintenance", std::nullopt};
  m.deliveries[{"webhook", "default", "delivered"}] = 3;
  m.deliveries[{"webhook", "default", "dead"}] = 1;
  m.deliveries[{"webhook", "default", "rejected"}] = 1;
  m.deliveries[{"tiktok", "default", "retry"}] = 5;
  m.deliveries[{"unknown", "unknown", "rejected"}] = 2;
  m.last_errors[{"webhook", "default"}] = {"HTTP 500: <script>alert('x')</script> & more", now - 5s};
  m.delivery_lag_seconds[{"tiktok", "default"}] = 75;
  m.backlog_rows = std::map<outbox::metrics::destination_key, std::int64_t>{{{"tiktok", "default"}, 12}};
  m.rows_by_state = {{"pending", 12}, {"dead", 2}};
  return m;
}

}  // namespace

TEST_CASE("html_text escapes markup, quotes and control characters, and caps the length") {
  CHECK(outbox::html_text("<b a=\"1\" b='2'>&</b>") == "&lt;b a=&quot;1&quot; b=&#39;2&#39;&gt;&amp;&lt;/b&gt;");
  CHECK(outbox::html_text("line\nnext\x1b[2J") == "line\\nnext\\x1b[2J");
  CHECK(outbox::html_text(std::string(1000, 'a')).size() <= 300);
}

TEST_CASE("the last hour window: counts since the sample just older than an hour, or since start") {
  const auto t0 = steady::now();
  delivery_history h(t0);
  outbox::metrics m;
  const outbox::metrics::destination_key k{"webhook", "default"};
  m.deliveries[{"webhook", "default", "delivered"}] = 10;
  CHECK(h.recent(m, k).delivered == 10);  // younger than an hour: since start
  CHECK_FALSE(h.full_window(t0 + 30min));
  for (int minute = 1; minute <= 90; ++minute) {
    m.deliveries[{"webhook", "default", "delivered"}] = 10 + static_cast<std::uint64_t>(minute);  // one a minute
    m.deliveries[{"webhook", "default", "dead"}] = static_cast<std::uint64_t>(minute / 10);
    h.sample(m, t0 + std::chrono::minutes(minute));
    h.sample(m, t0 + std::chrono::minutes(minute) + 10s);  // under the resolution: ignored
  }
  CHECK(h.full_window(t0 + 90min));
  const auto r = h.recent(m, k);
  CHECK(r.delivered == 60);  // minutes 31..90
  CHECK(r.failed == 9 - 3);
  CHECK(h.baseline_at() == t0 + 30min);
}

TEST_CASE("the status page has a row per destination with state, backlog, lag, counts and escaped errors") {
  const auto now = sys_clock::now();
  const auto m = sample_snapshot(now);
  const delivery_history h(steady::now());
  const auto page = outbox::render_status_page({m, h, {false, "the database is not reachable"}, now, steady::now()});
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(occurrences(page, "<tr class=\"destination ") == 4);
  CHECK(page.find("data-provider=\"tiktok\" data-destination=\"default\" data-state=\"circuit open\"") !=
        std::string::npos);
  CHECK(page.find("<td class=\"backlog\">12</td><td class=\"lag\">75 s</td>") != std::string::npos);
  CHECK(page.find("<td class=\"delivered\">3</td><td class=\"retried\">0</td><td class=\"failed\">2</td>") !=
        std::string::npos);
  CHECK(page.find("data-provider=\"unknown\" data-destination=\"unknown\" data-state=\"not configured\"") !=
        std::string::npos);
  CHECK(page.find("paused by alice@laptop: provider maintenance") != std::string::npos);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more") != std::string::npos);
  CHECK(page.find("not ready: the database is not reachable") != std::string::npos);
  CHECK(page.find("since start") != std::string::npos);
}

TEST_CASE("a pause shows since when; the answer that paused a destination is its last error, shown once") {
  const auto now = sys_clock::now();
  outbox::metrics m;
  m.instance = "vm:4433:edc7556f";
  outbox::destination_view refused{"paused (automatic)", "HTTP 401: token expired", now + 60s};
  refused.paused_since = now - 10min;
  m.destinations[{"meta", "default"}] = refused;
  m.last_errors[{"meta", "default"}] = {"HTTP 500: an older failure", now - 1h};
  outbox::destination_view on_call{"paused", "paused by alice: maintenance", std::nullopt};
  on_call.paused_since = now - 2h;
  m.destinations[{"webhook", "default"}] = on_call;
  const delivery_history h(steady::now());
  const auto page = outbox::render_status_page({m, h, {true, ""}, now, steady::now()});
  CHECK(occurrences(page, "HTTP 401: token expired") == 1);  // in the last-error column only
  CHECK(page.find("<td class=\"last-error\"><span class=\"error\">HTTP 401: token expired") != std::string::npos);
  CHECK(page.find("an older failure") == std::string::npos);
  CHECK(page.find("since " + rfc3339(now - 10min)) != std::string::npos);
  CHECK(page.find("since " + rfc3339(now - 2h)) != std::string::npos);
  CHECK(occurrences(page, "paused by alice: maintenance") == 1);  // who paused it: under its state
}

TEST_CASE("a thousand destinations: counts by state first, the 50 that need a look, a filter for the rest") {
  const auto now = sys_clock::now();
  outbox::metrics m;
  m.instance = "vm:1:aaaa";
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "project_" + std::to_string(1000 + i);
    outbox::destination_view v{"delivering", "", std::nullopt};
    if (i % 10 == 5) v = {"paused", "paused by on-call: client asked", std::nullopt};
    if (i == 999) v = {"circuit open", "circuit open: 5 failures", now + 30s};
    v.zero_filled = false;
    m.destinations[{i < 500 ? "meta" : "tiktok", name}] = v;
  }
  m.registry_unusable[{"meta", "project_3000"}] = "access_token: cannot be opened: sealed for key 3f2a";
  const delivery_history h(steady::now());
  const auto page = outbox::render_status_page({m, h, {true, ""}, now, steady::now()});
  CHECK(page.find("<dd id=\"destinations\">1001: 899 delivering, 100 paused, 1 circuit-open, 1 unusable</dd>") !=
        std::string::npos);
  CHECK(occurrences(page, "<tr class=\"destination ") == 50);
  CHECK(page.find("951 more destinations: filter by provider, destination or state") != std::string::npos);
  // Not delivering comes first: the unusable entry and the open circuit are among the 50.
  CHECK(page.find("data-destination=\"project_3000\" data-state=\"not usable\"") != std::string::npos);
  CHECK(page.find("sealed for key 3f2a") != std::string::npos);
  CHECK(page.find("data-destination=\"project_1999\" data-state=\"circuit open\"") != std::string::npos);
  CHECK(page.find("<form id=\"filter\" method=\"get\" action=\"/status\">") != std::string::npos);

  // /status?provider=tiktok&state=paused&destination=project_15*
  auto filter = outbox::parse_status_query("/status?provider=tiktok&state=paused&destination=project_15%2A");
  CHECK(filter.destination == "project_15*");
  const auto narrowed = outbox::render_status_page({m, h, {true, ""}, now, steady::now(), filter});
  CHECK(occurrences(narrowed, "<tr class=\"destination ") == 10);  // project_1505, 1515, ... 1595
  CHECK(narrowed.find("more destinations") == std::string::npos);
  CHECK(narrowed.find("<option selected>paused</option>") != std::string::npos);
  filter = outbox::parse_status_query("/status?provider=%3Cb%3E");
  const auto none = outbox::render_status_page({m, h, {true, ""}, now, steady::now(), filter});
  CHECK(none.find("no destination matches the filter") != std::string::npos);
  CHECK(none.find("value=\"&lt;b&gt;\"") != std::string::npos);  // echoed escaped
}

TEST_CASE("the status page names its dispatcher and shows every live dispatcher's automatic pauses") {
  const auto now = sys_clock::now();
  outbox::metrics m;
  m.instance = "vm:1:aaaa";
  m.destinations[{"meta", "default"}] = {"delivering", "", std::nullopt};
  m.fleet.push_back({"vm:1:aaaa", "vm", "2026-12-06T03:54:05.123+00:00", {}});
  m.fleet.push_back({"vm:2:bbbb",
                     "vm2",
                     "2026-12-06T03:54:06+00:00",
                     {{{"meta", "default"}, "since 2026-12-06T03:50:00.5+00:00: HTTP 401: token expired"}}});
  const delivery_history h(steady::now());
  const auto page = outbox::render_status_page({m, h, {true, ""}, now, steady::now()});
  // Under the state this process delivers with: another process's pause of the same destination.
  CHECK(page.find("paused on vm:2:bbbb: since 2026-12-06T03:50:00Z: HTTP 401: token expired") != std::string::npos);
  CHECK(page.find("<h2>Dispatchers</h2>") != std::string::npos);
  CHECK(occurrences(page, "<tr class=\"dispatcher\"") == 2);
  CHECK(page.find("vm:1:aaaa (this one)") != std::string::npos);
  CHECK(page.find("2026-12-06T03:54:06Z") != std::string::npos);  // last seen, in the page's one format
  CHECK(page.find("are this dispatcher's (vm:1:aaaa;") != std::string::npos);
}

TEST_CASE("the status page in headless Chromium, served by the metrics server: one row per destination") {
  const auto now = sys_clock::now();
  asio::io_context io;
  outbox::metrics_server server(io.get_executor(), "127.0.0.1:0",
                                outbox::metrics_server::snapshot_fn{[now] { return sample_snapshot(now); }}, [] {
                                  return std::pair<bool, std::string>{true, {}};
                                });
  asio::co_spawn(io, server.async_run(), asio::detached);
  std::thread loop([&] { io.run(); });
  const auto url = "http://127.0.0.1:" + std::to_string(server.port()) + "/status";
  outbox::test::tool_result dom;
  try {
    dom = outbox::test::chromium_dump_dom(url);
  } catch (...) {
    asio::post(io, [&] { server.stop(); });
    loop.join();
    throw;
  }
  asio::post(io, [&] { server.stop(); });
  loop.join();
  INFO(dom.command);
  INFO(dom.err.substr(dom.err.size() > 2000 ? dom.err.size() - 2000 : 0));
  REQUIRE(dom.exit_code == 0);
  INFO(dom.out);
  CHECK(dom.out.find("<title>outbox dispatcher status</title>") != std::string::npos);
  CHECK(occurrences(dom.out, "<tr class=\"destination ") == 4);
  for (const char* row : {R"(data-provider="webhook" data-destination="default" data-state="delivering")",
                          R"(data-provider="tiktok" data-destination="default" data-state="circuit open")",
                          R"(data-provider="meta" data-destination="pixel" data-state="paused")",
                          R"(data-provider="unknown" data-destination="unknown" data-state="not configured")"}) {
    CAPTURE(row);
    CHECK(dom.out.find(row) != std::string::npos);
  }
  CHECK(dom.out.find("<script") == std::string::npos);  // the error text stayed text
  CHECK(dom.out.find("&lt;script&gt;alert('x')&lt;/script&gt; &amp; more") != std::string::npos);
  CHECK(dom.out.find("<td class=\"lag\">75 s</td>") != std::string::npos);
}

}  // namespace status_page_test

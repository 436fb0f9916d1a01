// The operations endpoint over real HTTP, and the Prometheus rendering.
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "dispatcher/ops/metrics.hpp"
#include "dispatcher/ops/metrics_server.hpp"
#include "dispatcher/ops/version.hpp"
#include "providers/http/https_client.hpp"
#include "providers/user_data/match_keys.hpp"
#include "tests/support/raw_http.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace metrics_test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

tcp::endpoint local(std::uint16_t port) { return outbox::test::loopback(port); }

// Sends `request` as raw bytes (nothing when empty) and returns everything the
// server sends until it closes the connection (or `limit` passes).
asio::awaitable<std::string> async_exchange(asio::any_io_executor ex, std::uint16_t port, std::string request,
                                            std::chrono::milliseconds limit = 5s) {
  co_return co_await outbox::test::async_raw_exchange(ex, port, std::move(request), limit);
}

std::string header_block(const std::string& response) { return response.substr(0, response.find("\r\n\r\n")); }
std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string{} : response.substr(end + 4);
}

outbox::metrics_server make_server(asio::any_io_executor ex, outbox::metrics_server_limits limits = {}) {
  return outbox::metrics_server(
      ex, "127.0.0.1:0", [] { return std::string("outbox_up 1\n"); },
      [] {
        return std::pair<bool, std::string>{true, {}};
      },
      limits);
}

}  // namespace

TEST_CASE("metrics render counters, labels and histograms in the exposition format") {
  outbox::metrics m;
  m.deliveries[{"meta", "pixel_a", "delivered"}] = 3;
  m.request_seconds[{"meta", "pixel_a"}].observe(0.004);
  m.request_seconds[{"meta", "pixel_a"}].observe(2.0);
  m.rows_by_state["pending"] = 7;
  m.paused.insert({"tiktok", "we\"ird"});
  const auto text = m.render();
  CHECK(text.find("outbox_deliveries_total{provider=\"meta\",destination=\"pixel_a\",outcome=\"delivered\"} 3") !=
        std::string::npos);
  CHECK(text.find("outbox_request_duration_seconds_bucket{provider=\"meta\",destination=\"pixel_a\",le=\"0.005\"} 1") !=
        std::string::npos);
  CHECK(text.find("outbox_request_duration_seconds_bucket{provider=\"meta\",destination=\"pixel_a\",le=\"+Inf\"} 2") !=
        std::string::npos);
  CHECK(text.find("outbox_request_duration_seconds_count{provider=\"meta\",destination=\"pixel_a\"} 2") !=
        std::string::npos);
  CHECK(text.find("outbox_rows{state=\"pending\"} 7") != std::string::npos);
  CHECK(text.find("destination=\"we\\\"ird\"") != std::string::npos);
  CHECK(text.find("# TYPE outbox_claim_duration_seconds histogram") != std::string::npos);
  CHECK(m.total("delivered") == 3);
}

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

// The version project() declares in CMakeLists.txt.
std::string project_version() {
  std::ifstream in(std::string(OUTBOX_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  REQUIRE(std::regex_search(s, m, std::regex(R"(project\(outbox_dispatcher VERSION ([0-9.]+))")));
  return m[1];
}

}  // namespace

TEST_CASE("stumble 8: every series of a configured destination is exported from 0, gauges go to 0") {
  outbox::metrics m;
  m.destinations[{"webhook", "default"}] = {"delivering", "", std::nullopt};
  m.destinations[{"tiktok", "default"}] = {"paused", "paused by on-call", std::nullopt};
  m.paused.insert({"tiktok", "default"});
  const auto text = m.render();
  for (const auto* d : {R"(provider="webhook",destination="default")", R"(provider="tiktok",destination="default")"}) {
    const std::string labels = d;
    CAPTURE(labels);
    for (const auto outcome : outbox::delivery_outcomes) {
      CHECK(has_line(text, "outbox_deliveries_total{" + labels + ",outcome=\"" + std::string(outcome) + "\"} 0"));
    }
    for (const auto key : outbox::providers::match_key::all) {
      CHECK(has_line(text, "outbox_match_key_events_total{" + labels + ",key=\"" + std::string(key) + "\"} 0"));
    }
    CHECK(has_line(text, "outbox_requests_total{" + labels + "} 0"));
    CHECK(has_line(text, "outbox_request_duration_seconds_count{" + labels + "} 0"));
    CHECK(has_line(text, "outbox_delivery_lag_seconds{" + labels + "} 0"));
  }
  CHECK(has_line(text, R"(outbox_destination_paused{provider="webhook",destination="default"} 0)"));
  CHECK(has_line(text, R"(outbox_destination_paused{provider="tiktok",destination="default"} 1)"));
  for (const auto state : outbox::open_row_states)
    CHECK(has_line(text, "outbox_rows{state=\"" + std::string(state) + "\"} 0"));
  // Per field and reason, so only once seen; the backlog only once read from the database.
  CHECK(text.find("outbox_fields_dropped_total{") == std::string::npos);
  CHECK(text.find("outbox_backlog_rows") == std::string::npos);
  m.backlog_rows = std::map<outbox::metrics::destination_key, std::int64_t>{{{"tiktok", "default"}, 7}};
  m.delivery_lag_seconds[{"tiktok", "default"}] = 42.5;
  const auto later = m.render();
  CHECK(has_line(later, R"(outbox_backlog_rows{provider="tiktok",destination="default"} 7)"));
  CHECK(has_line(later, R"(outbox_backlog_rows{provider="webhook",destination="default"} 0)"));
  CHECK(has_line(later, R"(outbox_delivery_lag_seconds{provider="tiktok",destination="default"} 42.5)"));
}

// Sample lines (not # HELP / # TYPE) of an exposition.
std::size_t sample_lines(const std::string& text) {
  std::size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.empty() || line.starts_with('#') ? 0 : 1;
  return n;
}

TEST_CASE("a thousand registry destinations: only series that carry a value; the unusable ones counted and named") {
  outbox::metrics m;
  m.destinations[{"webhook", "default"}] = {"delivering", "", std::nullopt};  // the environment's: from 0
  const std::size_t base = sample_lines(m.render());
  for (int i = 0; i < 1000; ++i) {
    const outbox::metrics::destination_key k{"meta", "project_" + std::to_string(i)};
    auto& view = m.destinations[k] = {"delivering", "", std::nullopt};
    view.zero_filled = false;
    if (i < 110) {  // 100 paused by on-call, 10 with their circuit open
      view.state = i < 100 ? "paused" : "circuit open";
      view.paused_since = std::chrono::system_clock::time_point{std::chrono::seconds(1'700'000'000)};
      m.paused.insert(k);
    }
  }
  m.registry_unusable[{"tiktok", "project_3"}] = "access_token: cannot be opened: sealed for key 3f2a";
  const auto idle = m.render();
  // Two gauges per paused destination and the unusable one's line (the two totals
  // are there from the start, at 0); nothing for the 890 idle ones.
  CHECK(sample_lines(idle) == base + 110 * 2 + 1);
  CHECK(has_line(idle, R"(outbox_destination_paused{provider="meta",destination="project_5"} 1)"));
  CHECK(idle.find(R"(destination="project_500")") == std::string::npos);
  CHECK(has_line(idle, R"(outbox_registry_destinations{state="usable"} 1000)"));
  CHECK(has_line(idle, R"(outbox_registry_destinations{state="unusable"} 1)"));
  CHECK(has_line(idle, R"(outbox_registry_destination_unusable{provider="tiktok",destination="project_3"} 1)"));

  // A delivery makes its own series, not the zero-filled set of the environment's destinations.
  m.note_settled({"meta", "project_500"}, "delivered", "", std::chrono::system_clock::now());
  m.requests[{"meta", "project_500"}] = 1;
  m.request_seconds[{"meta", "project_500"}].observe(0.2);
  const auto busy = m.render();
  CHECK(has_line(busy, R"(outbox_deliveries_total{provider="meta",destination="project_500",outcome="delivered"} 1)"));
  CHECK(busy.find(R"(destination="project_500",outcome="dead")") == std::string::npos);
  // The counter, requests, and the histogram every registry destination of the provider shares.
  CHECK(sample_lines(busy) == sample_lines(idle) + 1 + 1 + 17);
  CHECK(has_line(busy, R"x(outbox_request_duration_seconds_count{provider="meta",destination="(registry)"} 1)x"));
  m.requests[{"meta", "project_501"}] = 1;
  m.request_seconds[{"meta", "project_501"}].observe(0.4);
  const auto two = m.render();
  CHECK(sample_lines(two) == sample_lines(busy) + 1);  // its requests counter; the histogram is shared
  CHECK(has_line(two, R"x(outbox_request_duration_seconds_count{provider="meta",destination="(registry)"} 2)x"));
}

TEST_CASE("a settled failure becomes its destination's last error; put-backs do not") {
  outbox::metrics m;
  const outbox::metrics::destination_key k{"webhook", "default"};
  const auto t = std::chrono::system_clock::now();
  m.note_settled(k, "retry", "HTTP 500: boom", t);
  m.note_settled(k, "paused", "destination paused: paused by configuration", t + 1s);
  m.note_settled(k, "released", "released unsent at shutdown", t + 2s);
  m.note_settled(k, "delivered", "", t + 3s);
  CHECK(m.deliveries.at({"webhook", "default", "retry"}) == 1);
  CHECK(m.deliveries.at({"webhook", "default", "paused"}) == 1);
  CHECK(m.deliveries.at({"webhook", "default", "delivered"}) == 1);
  REQUIRE(m.last_errors.contains(k));
  CHECK(m.last_errors.at(k).message == "HTTP 500: boom");
  CHECK(m.last_errors.at(k).at == t);
  m.note_settled(k, "dead", "HTTP 400: bad event", t + 4s);
  CHECK(m.last_errors.at(k).message == "HTTP 400: bad event");
}

TEST_CASE("outbox_build_info carries the project version from CMakeLists.txt and the commit") {
  const auto text = outbox::metrics{}.render();
  CHECK(has_line(text, "outbox_build_info{version=\"" + project_version() + "\",revision=\"" +
                           std::string(outbox::revision()) + "\"} 1"));
  CHECK((outbox::revision() == "unknown" || outbox::revision().size() == 12));
}

TEST_CASE("process metrics: /proc/self/stat parsed, and this process's own figures rendered") {
  // A command name with spaces and parentheses, as proc(5) allows.
  const std::string stat =
      "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 "
      "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  const auto parsed = outbox::parse_process_stat(stat, "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n", 100, 4096);
  REQUIRE(parsed);
  CHECK(parsed->cpu_seconds == doctest::Approx(3.0));
  CHECK(parsed->start_time_seconds == doctest::Approx(1700000010.0));
  CHECK(parsed->virtual_bytes == 123456789);
  CHECK(parsed->resident_bytes == 2048u * 4096u);
  CHECK_FALSE(outbox::parse_process_stat("garbage", "btime 1", 100, 4096));

  outbox::metrics m;
  m.process = outbox::read_process_stats();
  REQUIRE(m.process);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(m.process->start_time_seconds <= now + 1);
  CHECK(m.process->start_time_seconds > now - 3600);  // this test program started within the hour
  CHECK(m.process->resident_bytes > 1024 * 1024);
  CHECK(m.process->open_fds >= 3);
  const auto text = m.render();
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
                           "process_start_time_seconds ", "process_virtual_memory_bytes "}) {
    CAPTURE(name);
    CHECK(text.find(std::string("\n") + name) != std::string::npos);
  }
}

TEST_CASE("/status is an HTML page that runs nothing; the string-rendering server has none") {
  const auto [page,
              missing] = outbox::test::run_async([](auto ex) -> asio::awaitable<std::pair<std::string, std::string>> {
    outbox::metrics_server with(ex, "127.0.0.1:0", outbox::metrics_server::snapshot_fn{[] {
                                  outbox::metrics m;
                                  m.destinations[{"webhook", "default"}] = {"delivering", "", std::nullopt};
                                  return m;
                                }},
                                [] {
                                  return std::pair<bool, std::string>{true, {}};
                                });
    auto without = make_server(ex);
    asio::co_spawn(ex, with.async_run(), asio::detached);
    asio::co_spawn(ex, without.async_run(), asio::detached);
    auto p = co_await async_exchange(ex, with.port(), "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    auto n =
        co_await async_exchange(ex, without.port(), "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // The filter in the query string reaches the page.
    auto f = co_await async_exchange(
        ex, with.port(), "GET /status?provider=meta&state=paused HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    with.stop();
    without.stop();
    CHECK(body_of(f).find("no destination matches the filter") != std::string::npos);
    co_return std::pair{p, n};
  });
  INFO(page);
  CHECK(page.starts_with("HTTP/1.1 200 OK\r\n"));
  const auto headers = header_block(page);
  CHECK(headers.find("Content-Type: text/html; charset=utf-8") != std::string::npos);
  CHECK(headers.find("Content-Security-Policy: default-src 'none'") != std::string::npos);
  CHECK(headers.find("Cache-Control: no-store") != std::string::npos);
  CHECK(body_of(page).find("data-provider=\"webhook\" data-destination=\"default\" data-state=\"delivering\"") !=
        std::string::npos);
  CHECK(missing.starts_with("HTTP/1.1 404 "));
}

TEST_CASE("the metrics server answers /metrics, /healthz, /readyz and 404") {
  struct answers {
    int metrics = 0, health = 0, ready = 0, missing = 0;
    std::string metrics_body, ready_body;
  };
  const auto a = outbox::test::run_async([](auto ex) -> asio::awaitable<answers> {
    outbox::metrics_server server(
        ex, "127.0.0.1:0", [] { return std::string("outbox_up 1\n"); },
        [] {
          return std::pair<bool, std::string>{false, "the database is not reachable"};
        });
    asio::co_spawn(ex, server.async_run(), asio::detached);
    outbox::providers::https_client http(ex, {});
    const auto base = "http://127.0.0.1:" + std::to_string(server.port());
    answers out;
    auto get = [&](std::string path) {
      outbox::providers::http_request r;
      r.method = "GET";
      r.url = base + path;
      return http.async_send(std::move(r));
    };
    const auto m = co_await get("/metrics");
    const auto h = co_await get("/healthz");
    const auto r = co_await get("/readyz");
    const auto x = co_await get("/nope");
    out.metrics = m.response ? m.response->status : 0;
    out.metrics_body = m.response ? m.response->body : "";
    out.health = h.response ? h.response->status : 0;
    out.ready = r.response ? r.response->status : 0;
    out.ready_body = r.response ? r.response->body : "";
    out.missing = x.response ? x.response->status : 0;
    server.stop();
    http.close_idle();
    co_return out;
  });
  CHECK(a.metrics == 200);
  CHECK(a.metrics_body == "outbox_up 1\n");
  CHECK(a.health == 200);
  CHECK(a.ready == 503);
  CHECK(a.ready_body.find("database is not reachable") != std::string::npos);
  CHECK(a.missing == 404);
}

TEST_CASE("a malformed metrics address is refused with a clear message") {
  asio::io_context io;
  for (const char* bad : {"nonsense", "999.1.1.1:80", "127.0.0.1:99999"}) {
    CAPTURE(bad);
    std::string message;
    try {
      outbox::metrics_server s(
          io.get_executor(), bad, [] { return std::string(); },
          [] {
            return std::pair<bool, std::string>{true, {}};
          });
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    CHECK(message.find(bad) != std::string::npos);
  }
}

TEST_CASE("100 idle connections neither starve /metrics nor pile up file descriptors") {
  struct result {
    std::string answer;
    double seconds = 0;
    std::size_t fds_before = 0, fds_after = 0, open = 0;
  };
  const auto r = outbox::test::run_async([](auto ex) -> asio::awaitable<result> {
    auto server = make_server(ex);
    asio::co_spawn(ex, server.async_run(), asio::detached);
    result out;
    out.fds_before = open_fds();
    std::vector<tcp::socket> idle;
    for (int i = 0; i < 100; ++i) {
      tcp::socket s(ex);
      auto [ec] = co_await s.async_connect(local(server.port()), use_tuple);
      REQUIRE_FALSE(ec);
      idle.push_back(std::move(s));  // connected, sends nothing
    }
    const auto start = steady::now();
    // Accepted after the 100 idle ones (the listen queue is FIFO): by its answer all were accepted.
    out.answer =
        co_await async_exchange(ex, server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    out.seconds = std::chrono::duration<double>(steady::now() - start).count();
    out.fds_after = open_fds();
    out.open = server.open_connections();
    server.stop();
    co_return out;
  });
  INFO(r.answer);
  CHECK(r.answer.starts_with("HTTP/1.1 200 OK"));
  CHECK(body_of(r.answer) == "outbox_up 1\n");
  CHECK(r.seconds < 2.0);
  MESSAGE("GET /metrics behind 100 idle connections: " << r.seconds << " s; fds " << r.fds_before << " -> "
                                                       << r.fds_after);
  // The test's own 100 client sockets, plus at most 16 on the server side (and a little slack).
  CHECK(r.fds_after <= r.fds_before + 100 + 16 + 2);
  CHECK(r.open <= 16);
}

TEST_CASE("HEAD /metrics answers the headers of GET, with its Content-Length, and no body") {
  const auto [head, get] = outbox::test::run_async([](auto ex) -> asio::awaitable<std::pair<std::string, std::string>> {
    auto server = make_server(ex);
    asio::co_spawn(ex, server.async_run(), asio::detached);
    auto h =
        co_await async_exchange(ex, server.port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    auto g =
        co_await async_exchange(ex, server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    server.stop();
    co_return std::pair{h, g};
  });
  INFO(head);
  CHECK(head.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(head.find("\r\n\r\n") == head.size() - 4);  // nothing after the header block
  CHECK(header_block(head).find("Content-Length: 12") != std::string::npos);
  CHECK(header_block(head).find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  CHECK(header_block(get).find("Content-Length: 12") != std::string::npos);
  CHECK(body_of(get) == "outbox_up 1\n");
}

TEST_CASE("a connection that sends nothing is closed after the request timeout") {
  outbox::metrics_server_limits limits;
  limits.request_timeout = 300ms;
  const auto [got, seconds] =
      outbox::test::run_async([limits](auto ex) -> asio::awaitable<std::pair<std::string, double>> {
        auto server = make_server(ex, limits);
        asio::co_spawn(ex, server.async_run(), asio::detached);
        const auto start = steady::now();
        auto answer = co_await async_exchange(ex, server.port(), "", 10s);
        const double took = std::chrono::duration<double>(steady::now() - start).count();
        server.stop();
        co_return std::pair{answer, took};
      });
  CHECK(got.empty());
  CHECK(seconds >= 0.25);
  CHECK(seconds < 3.0);
}

TEST_CASE("requests over the size cap are refused: 431 for headers, 413 for a body") {
  const auto [big_header, big_body] =
      outbox::test::run_async([](auto ex) -> asio::awaitable<std::pair<std::string, std::string>> {
        auto server = make_server(ex);
        asio::co_spawn(ex, server.async_run(), asio::detached);
        auto h = co_await async_exchange(
            ex, server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
        auto b = co_await async_exchange(
            ex, server.port(),
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + std::string(1000, 'b'));
        server.stop();
        co_return std::pair{h, b};
      });
  CHECK(big_header.starts_with("HTTP/1.1 431 "));
  CHECK(big_body.starts_with("HTTP/1.1 413 "));
}

TEST_CASE("when every slot holds an idle client, the oldest idle one makes room") {
  outbox::metrics_server_limits limits;
  limits.max_connections = 2;
  const auto [first_closed, answer] =
      outbox::test::run_async([limits](auto ex) -> asio::awaitable<std::pair<bool, std::string>> {
        auto server = make_server(ex, limits);
        asio::co_spawn(ex, server.async_run(), asio::detached);
        tcp::socket a(ex), b(ex);
        (void)co_await a.async_connect(local(server.port()), use_tuple);
        (void)co_await b.async_connect(local(server.port()), use_tuple);
        auto got =
            co_await async_exchange(ex, server.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        // The oldest idle connection was closed by the server: its read ends at once.
        std::array<char, 16> buf{};
        auto [ec, n] = co_await a.async_read_some(asio::buffer(buf), use_tuple);
        (void)n;
        server.stop();
        co_return std::pair{ec == asio::error::eof || ec == asio::error::connection_reset, got};
      });
  CHECK(first_closed);
  CHECK(answer.starts_with("HTTP/1.1 200 OK"));
}

TEST_CASE(
    "metrics: numbers as the shortest text that reads back the same; NaN and infinities as Prometheus writes them") {
  outbox::metrics m;
  m.oldest_due_seconds = 0.05;
  auto text = m.render();
  CHECK(text.find("\noutbox_oldest_due_seconds 0.05\n") != std::string::npos);
  CHECK(text.find("0.050000000000000003") == std::string::npos);
  m.oldest_due_seconds = 1e21;
  CHECK(m.render().find("\noutbox_oldest_due_seconds 1e+21\n") != std::string::npos);
  m.oldest_due_seconds = std::numeric_limits<double>::infinity();
  CHECK(m.render().find("\noutbox_oldest_due_seconds +Inf\n") != std::string::npos);
}

}  // namespace metrics_test

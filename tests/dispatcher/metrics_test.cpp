// The operations endpoint over real HTTP, and the Prometheus rendering.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "dispatcher/metrics.hpp"
#include "dispatcher/metrics_server.hpp"
#include "providers/https_client.hpp"
#include "tests/support/run_async.hpp"

namespace asio = boost::asio;

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

TEST_CASE("the metrics server answers /metrics, /healthz, /readyz and 404") {
  struct answers {
    int metrics = 0, health = 0, ready = 0, missing = 0;
    std::string metrics_body, ready_body;
  };
  const auto a = outbox::test::run_async([](auto ex) -> asio::awaitable<answers> {
    outbox::metrics_server server(
        ex, "127.0.0.1:0", [] { return std::string("outbox_up 1\n"); },
        [] { return std::pair<bool, std::string>{false, "the database is not reachable"}; });
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
      outbox::metrics_server s(io.get_executor(), bad, [] { return std::string(); },
                               [] { return std::pair<bool, std::string>{true, {}}; });
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    CHECK(message.find(bad) != std::string::npos);
  }
}

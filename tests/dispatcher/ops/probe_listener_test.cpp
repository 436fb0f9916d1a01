// OUTBOX_PROBE_ADDRESS: /healthz and /readyz on a listener of their own, so
// that clients holding every slot of the metrics listener (here: 16 clients
// that ask for /metrics and never read the answer) cannot make Kubernetes
// restart a healthy pod. Real sockets, one io_context, as `dispatcher run`.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "dispatcher/ops/metrics_server.hpp"
#include "tests/support/raw_http.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace probe_listener_test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

tcp::endpoint local(std::uint16_t port) { return outbox::test::loopback(port); }

// One GET; everything the server sends until it closes (or `limit` passes).
asio::awaitable<std::string> async_get(asio::any_io_executor ex, std::uint16_t port, std::string path,
                                       std::chrono::milliseconds limit = 2s) {
  co_return co_await outbox::test::async_raw_exchange(
      ex, port, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", limit);
}

std::pair<bool, std::string> ready() { return {true, {}}; }

struct figures {
  int probes_answered_on_probe_listener = 0;
  int probes_answered_on_metrics_listener = 0;
  std::string probe_listener_metrics;
  std::string probe_listener_readyz;
};

}  // namespace

TEST_CASE("a flood that holds every slot of the metrics listener leaves the probe listener answering") {
  const auto f = outbox::test::run_async(
      [](auto ex) -> asio::awaitable<figures> {
        outbox::metrics_server_limits limits;
        limits.write_timeout = 30s;  // the flood's unread answers hold their slots for the whole test
        // A large /metrics answer, so that a client that does not read it fills the socket buffers.
        outbox::metrics_server metrics(
            ex, "127.0.0.1:0", [] { return std::string(4 << 20, '#'); }, [] { return ready(); }, limits);
        outbox::metrics_server probes(ex, "127.0.0.1:0", outbox::metrics_server::probes_only, [] { return ready(); });
        asio::co_spawn(ex, metrics.async_run(), asio::detached);
        asio::co_spawn(ex, probes.async_run(), asio::detached);

        std::vector<tcp::socket> flood;
        std::string pipelined;
        for (int i = 0; i < 8; ++i) pipelined += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        for (int i = 0; i < 16; ++i) {
          tcp::socket s(ex);
          auto [ec] = co_await s.async_connect(local(metrics.port()), use_tuple);
          REQUIRE_FALSE(ec);
          (void)co_await asio::async_write(s, asio::buffer(pipelined), use_tuple);
          flood.push_back(std::move(s));  // never reads
        }
        asio::steady_timer settle(ex, 500ms);  // the server is writing answers nobody reads
        co_await settle.async_wait(asio::use_awaitable);

        figures out;
        for (int i = 0; i < 10; ++i) {
          const auto on_probes = co_await async_get(ex, probes.port(), "/healthz");
          if (on_probes.starts_with("HTTP/1.1 200 OK")) ++out.probes_answered_on_probe_listener;
          const auto on_metrics = co_await async_get(ex, metrics.port(), "/healthz", 300ms);
          if (on_metrics.starts_with("HTTP/1.1 200 OK")) ++out.probes_answered_on_metrics_listener;
        }
        out.probe_listener_metrics = co_await async_get(ex, probes.port(), "/metrics");
        out.probe_listener_readyz = co_await async_get(ex, probes.port(), "/readyz");
        metrics.stop();
        probes.stop();
        co_return out;
      },
      60s);
  CHECK(f.probes_answered_on_probe_listener == 10);
  // What the flood does to the shared listener: every slot is busy answering.
  CHECK(f.probes_answered_on_metrics_listener == 0);
  CHECK(f.probe_listener_metrics.starts_with("HTTP/1.1 404"));
  CHECK(f.probe_listener_metrics.find("try /healthz or /readyz") != std::string::npos);
  CHECK(f.probe_listener_readyz.starts_with("HTTP/1.1 200 OK"));
}

}  // namespace probe_listener_test

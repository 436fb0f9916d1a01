// Metric label values come from configuration, not from CRM rows: a row that
// names a provider or destination nobody configured is counted under
// provider="unknown", so a typo in the CRM cannot create a series forever.
#include <doctest/doctest.h>


#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

namespace {

// GET /metrics with a plain blocking socket (this is the test's thread, not an event loop).
std::string scrape(std::uint16_t port) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  boost::asio::write(s, boost::asio::buffer(request));
  std::string out;
  boost::system::error_code ec;
  boost::asio::read(s, boost::asio::dynamic_buffer(out), ec);
  return out;
}

// A port that was free a moment ago (the setting does not take port 0).
std::uint16_t free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

}  // namespace

TEST_CASE("finding 11: rows naming unknown providers or destinations fold into one metric label") {
  e2e_fixture fx;
  const auto port = free_port();
  auto& d = fx.start_dispatcher({{"OUTBOX_METRICS_ADDRESS", "127.0.0.1:" + std::to_string(port)}});
  REQUIRE(d.wait_for_log("serving /metrics", 15s));
  for (int i = 1; i <= 3; ++i) fx.enqueue(i, "Lead", R"({"value": 1})", "bogus_provider_" + std::to_string(i));
  REQUIRE(eventually([&] { return fx.count("state = 'dead'") == 3; }, 15s));
  const auto text = scrape(port);
  CHECK(text.find("bogus_provider") == std::string::npos);
  CHECK(text.find("outbox_deliveries_total{provider=\"unknown\",destination=\"unknown\",outcome=\"rejected\"} 3") !=
        std::string::npos);
}

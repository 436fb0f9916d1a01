#include "tests/support/metrics_probe.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace outbox::test {

std::string http_get_local(std::uint16_t port, const std::string& path) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  boost::asio::write(s, boost::asio::buffer(request));
  std::string out;
  boost::system::error_code ec;
  boost::asio::read(s, boost::asio::dynamic_buffer(out), ec);  // until the server closes
  return out;
}

std::string scrape_metrics(std::uint16_t port) { return http_get_local(port, "/metrics"); }

std::uint16_t free_local_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

}  // namespace outbox::test

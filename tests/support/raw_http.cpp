#include "tests/support/raw_http.hpp"

#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace outbox::test {

namespace asio = boost::asio;

asio::ip::tcp::endpoint loopback(std::uint16_t port) { return {asio::ip::make_address("127.0.0.1"), port}; }

asio::awaitable<std::string> async_raw_exchange(asio::any_io_executor ex, std::uint16_t port, std::string request,
                                                std::chrono::milliseconds limit) {
  constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
  boost::beast::tcp_stream s(ex);
  s.expires_after(limit);
  auto [cec] = co_await s.async_connect(loopback(port), use_tuple);
  if (cec) co_return "connect failed: " + cec.message();
  if (!request.empty()) (void)co_await asio::async_write(s, asio::buffer(request), use_tuple);
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), use_tuple);
    out.append(buf.data(), n);
    if (ec) break;
  }
  co_return out;
}

}  // namespace outbox::test

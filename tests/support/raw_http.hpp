#pragma once
// Raw HTTP/1.1 over plain TCP to a local listener, for tests of the
// operations endpoint: the bytes go out exactly as written, and everything
// the server sends comes back, so malformed requests and answers are visible.
#include <chrono>
#include <cstdint>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace outbox::test {

[[nodiscard]] boost::asio::ip::tcp::endpoint loopback(std::uint16_t port);

// Sends `request` as raw bytes to 127.0.0.1:`port` (nothing when empty) and
// returns everything the server sends until it closes the connection (or
// `limit` passes); "connect failed: ..." when it cannot connect.
boost::asio::awaitable<std::string> async_raw_exchange(boost::asio::any_io_executor ex, std::uint16_t port,
                                                       std::string request, std::chrono::milliseconds limit);

}  // namespace outbox::test

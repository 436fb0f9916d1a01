// TLS on the connection's own socket (providers/http/tls_session.hpp) against
// real local TLS servers: an answer that arrives while the request is still
// being written, and writes to a peer that has gone.
#include <chrono>
#include <string>
#include <system_error>

#include <doctest/doctest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "providers/http/https_client.hpp"
#include "providers/http/tls_session.hpp"
#include "tests/providers/http/https_test_helpers.hpp"
#include "tests/support/test_https_server.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace tls_session_test {

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using outbox::providers::https_client;
using outbox::providers::detail::tls_session;
using outbox::test::response_plan;
using outbox::test::test_https_server;
using outbox::test::test_server_options;
using namespace outbox::test::https;

struct write_errors {
  int reset = 0;        // ECONNRESET
  int broken_pipe = 0;  // EPIPE: a write(2) here raises SIGPIPE, which would end this process
  int other = 0;
};

// Handshakes with the server, sends one request, waits until the server has
// closed the connection after reading it, then keeps writing.
asio::awaitable<write_errors> write_after_the_peer_left(test_https_server& server) {
  const auto ex = co_await asio::this_coro::executor;
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  ctx.load_verify_file(pki().trusted.cert_pem_file().string());
  asio::ip::tcp::socket socket{ex};
  co_await socket.async_connect({asio::ip::make_address("127.0.0.1"), server.port()}, asio::use_awaitable);
  tls_session session{ctx.native_handle(), socket};
  const auto guard = session.watch(std::chrono::steady_clock::now() + 5s);
  REQUIRE_FALSE(co_await session.async_handshake());
  const std::string request = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}";
  auto [first_ec, first_n] = co_await session.async_write(asio::buffer(request));
  REQUIRE_FALSE(first_ec);
  REQUIRE(first_n == request.size());
  REQUIRE(co_await server.async_wait_for_requests(1, 5s));  // read, and the connection closed

  write_errors seen;
  for (int i = 0; i < 20 && seen.broken_pipe == 0; ++i) {
    auto [ec, n] = co_await session.async_write(asio::buffer(request));
    (void)n;
    if (ec == asio::error::connection_reset) ++seen.reset;
    else if (ec == asio::error::broken_pipe) ++seen.broken_pipe;
    else if (ec) ++seen.other;
  }
  co_return seen;
}

}  // namespace

TEST_CASE("writes to a peer that closed fail with its error, and a broken pipe raises no SIGPIPE") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::close_without_response()});

  const write_errors seen = run_on(io, write_after_the_peer_left(server));

  CHECK(seen.broken_pipe == 1);  // reached: OpenSSL wrote into the dead socket, and we are still here
  CHECK(seen.other == 0);
}

// While a large body is being written the client waits for room to write,
// and the loop may see the early answer become readable then. The read must
// not wait for readiness again: nothing more arrives, and it would time out.
TEST_CASE("an answer sent before the request's body is all written is read at once") {
  std::string body(12 * 1024 * 1024, 'x');  // more than the socket buffers hold
  for (const bool tls : {true, false}) {
    CAPTURE(tls);
    asio::io_context io;
    test_server_options opts = tls ? trusted_tls() : test_server_options{};
    opts.answer_before_body = true;
    test_https_server server{io.get_executor(), opts};
    server.script({response_plan::reply(413, R"({"error":"too large"})"), response_plan::reply(200)});
    https_client client{io.get_executor(), client_options()};
    auto req = post(server.url("/upload"));
    req.body = body;

    const auto refused = run_on(io, client.async_send(req));

    REQUIRE(refused.ok());  // not a timeout after request_timeout (2 s)
    CHECK(refused.response->status == 413);
    CHECK(refused.duration < 2s);
    const auto next = run_on(io, client.async_send(post(server.url("/"))));  // the connection stayed in step
    REQUIRE(next.ok());
    CHECK(next.response->status == 200);
    CHECK(server.accepted_connections() == 1);
  }
}

}  // namespace tls_session_test

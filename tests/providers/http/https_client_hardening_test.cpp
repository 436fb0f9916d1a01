// The HTTPS client against unusual and hostile servers (real local TLS): 1xx
// interim responses, endless chunk lines, trailers and headers, slow name
// lookups, and the one deadline that bounds an async_send.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/use_future.hpp>

#include "providers/http/https_client.hpp"
#include "tests/providers/http/https_test_helpers.hpp"
#include "tests/support/test_https_server.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace https_client_hardening_test {

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace outbox::test::https;
using outbox::providers::https_client;
using outbox::providers::name_lookup_result;
using outbox::providers::transport_error;
using outbox::test::response_plan;
using outbox::test::test_https_server;

constexpr std::size_t flood_total = 64u << 20;  // more than loopback socket buffers can swallow

const std::string chunked_head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string repeated(const std::string& piece, std::size_t at_least) {
  std::string out;
  while (out.size() < at_least) out += piece;
  return out;
}

// Resolves every name to 127.0.0.1; "slow.test" only after 2 s.
name_lookup_result slow_for_slow_test(const std::string& host) {
  if (host == "slow.test") std::this_thread::sleep_for(2s);
  return {{asio::ip::make_address("127.0.0.1")}, {}};
}

}  // namespace

TEST_CASE("interim 1xx responses are skipped and the kept-alive connection stays in step") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  // Apart in time, so a client that took the 100 as final would pool the
  // connection with the rest still on its way and hand that to the next request.
  server.script({response_plan::raw({"HTTP/1.1 100 Continue\r\n\r\n",
                                     "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
                                     "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"n\":1}"},
                                    30ms),
                 response_plan::reply(201, R"({"n":2})")});
  https_client client{io.get_executor(), client_options()};

  const auto first = run_on(io, client.async_send(post(server.url("/a"))));
  REQUIRE(first.ok());
  CHECK(first.response->status == 200);
  CHECK(first.response->body == R"({"n":1})");
  CHECK_FALSE(first.response->header("link").has_value());  // the 103's fields are not the response's
  CHECK(client.idle_connections() == 1);

  const auto second = run_on(io, client.async_send(post(server.url("/b"))));
  REQUIRE(second.ok());
  CHECK(second.response->status == 201);
  CHECK(second.response->body == R"({"n":2})");
  CHECK(server.accepted_connections() == 1);
  CHECK(server.request_count() == 2);
}

TEST_CASE("101 Switching Protocols is a bad response") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script(
      {response_plan::raw({"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\n\r\n"})});
  https_client client{io.get_executor(), client_options()};

  const auto result = run_on(io, client.async_send(post(server.url("/"))));

  CHECK_FALSE(result.ok());
  CHECK(result.error == transport_error::bad_response);
  CHECK(contains(result.error_message, "101 Switching Protocols"));
  CHECK(client.idle_connections() == 0);
}

TEST_CASE("hostile responses are refused early with a clear error") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  https_client client{io.get_executor(), client_options()};
  std::string expected;

  SUBCASE("a chunk extension that never ends") {
    server.script({response_plan::flood(chunked_head + "5;ext=", std::string(64 * 1024, 'e'), flood_total)});
    expected = "chunk-size line or trailers exceed 65536 bytes";
  }
  SUBCASE("trailers that never end") {
    server.script(
        {response_plan::flood(chunked_head + "2\r\nok\r\n0\r\n",
                              repeated("X-Trailer: " + std::string(50, 't') + "\r\n", 64 * 1024), flood_total)});
    expected = "chunk-size line or trailers exceed 65536 bytes";
  }
  SUBCASE("a long chunk extension") {
    server.script({response_plan::raw({chunked_head + "2;" + std::string(1000, 'e') + "\r\nok\r\n0\r\n\r\n"})});
    expected = "chunk extension longer than 256 bytes";
  }
  SUBCASE("10000 header fields in 50 KB") {
    server.script(
        {response_plan::raw({"HTTP/1.1 200 OK\r\n" + repeated("a:b\r\n", 50'000) + "Content-Length: 2\r\n\r\nok"})});
    expected = "more than 100 header fields";
  }
  SUBCASE("trailers that push the header over 64 KiB") {
    server.script(
        {response_plan::raw({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Pad: " + std::string(36 * 1024, 'p') +
                             "\r\n\r\n2\r\nok\r\n0\r\nX-Tail: " + std::string(36 * 1024, 't') + "\r\n\r\n"})});
    expected = "header exceeds 65536 bytes (status lines, fields and trailers)";
  }
  CAPTURE(expected);

  const auto result = run_on(io, client.async_send(post(server.url("/"))));

  CHECK_FALSE(result.ok());
  CHECK(result.error == transport_error::response_too_large);
  CHECK(contains(result.error_message, expected));
  CHECK(result.duration < 1s);                  // not the 2 s request timeout
  CHECK(server.bytes_written() < flood_total);  // the client hung up instead of swallowing it all
  CHECK(client.idle_connections() == 0);
}

TEST_CASE("a slow name lookup holds up neither other hosts nor its own connect deadline") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  auto opts = client_options();
  opts.connect_timeout = 1s;
  auto lookups = std::make_shared<std::atomic<int>>(0);
  opts.resolver = [lookups](const std::string& host) {
    ++*lookups;
    return slow_for_slow_test(host);
  };
  https_client client{io.get_executor(), opts};

  auto slow = asio::co_spawn(io, client.async_send(post(server.url("/", "slow.test"))), asio::use_future);
  auto slow_too = asio::co_spawn(io, client.async_send(post(server.url("/", "slow.test"))), asio::use_future);
  auto fast = asio::co_spawn(io, client.async_send(post(server.url("/", "localhost"))), asio::use_future);
  run_until(io, [&] { return is_ready(fast); });
  CHECK_FALSE(is_ready(slow));  // localhost did not wait behind slow.test
  const auto fast_result = fast.get();
  REQUIRE(fast_result.ok());
  CHECK(fast_result.duration < opts.connect_timeout);

  run_until(io, [&] { return is_ready(slow) && is_ready(slow_too); });
  for (auto* pending : {&slow, &slow_too}) {
    const auto result = pending->get();
    CHECK(result.error == transport_error::timeout);
    CHECK(contains(result.error_message, "DNS lookup of slow.test timed out after"));
    CHECK(result.duration >= opts.connect_timeout - 10ms);
    CHECK(result.duration < opts.connect_timeout + 500ms);  // not the 2 s the lookup takes
    CHECK_FALSE(result.maybe_delivered);
  }
  CHECK(*lookups == 2);  // one thread for slow.test, shared by both requests; one for localhost
  CHECK(server.request_count() == 1);
}

TEST_CASE("a lookup thread that outlives its client and io_context posts nothing") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto thread_done = std::make_shared<std::promise<void>>();
  auto done_future = thread_done->get_future();
  // Fulfilled when the last copy of the resolver (the lookup thread's) is destroyed.
  std::shared_ptr<int> last_copy{new int(0), [thread_done](int* p) {
                                   delete p;
                                   thread_done->set_value();
                                 }};
  {
    asio::io_context io;
    auto opts = client_options();
    opts.connect_timeout = 100ms;
    opts.resolver = [released, last_copy](const std::string&) {
      released.wait();
      return name_lookup_result{{asio::ip::make_address("127.0.0.1")}, {}};
    };
    last_copy.reset();
    https_client client{io.get_executor(), opts};
    const auto result = run_on(io, client.async_send(post("https://blocked.test:1/")));
    CHECK(result.error == transport_error::timeout);
  }  // client and io_context gone while the lookup still blocks
  release.set_value();
  CHECK(done_future.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("worst_case_attempt bounds an async_send even across the stale-connection resend") {
  CHECK(outbox::providers::https_client_options{}.worst_case_attempt() == 16s);  // 3 + 3 + 10
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  auto opts = client_options();
  opts.connect_timeout = 200ms;
  opts.handshake_timeout = 200ms;
  opts.request_timeout = 1500ms;
  // The reused connection is dropped after 1.3 s without a byte; the fresh one hangs.
  server.script(
      {response_plan::reply(200), response_plan::close_without_response().after(1300ms), response_plan::hang()});
  https_client client{io.get_executor(), opts};
  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());

  const auto result = run_on(io, client.async_send(post(server.url("/"))));

  CHECK(result.error == transport_error::timeout);
  CHECK(result.resent_on_fresh_connection);
  CHECK(server.request_count() == 3);
  CHECK(result.duration >= opts.worst_case_attempt() - 10ms);  // 1.9 s
  // Without the shared deadline the resend would get a whole request_timeout: 2.8 s.
  CHECK(result.duration < opts.worst_case_attempt() + 400ms);
}

TEST_CASE("an unsolicited 408 left on an idle kept-alive connection is not taken for the next request's answer") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  // The first answer, and behind it the 408 a server may send an idle connection
  // before closing it (RFC 9112 9.6): waiting for whatever the client sends next.
  server.script({response_plan::raw({"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
                                     "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"}),
                 response_plan::reply(201)});
  https_client client{io.get_executor(), client_options()};
  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  const auto second = run_on(io, client.async_send(post(server.url("/"))));
  REQUIRE(second.ok());
  CHECK(second.response->status == 201);           // the answer to this request, from a fresh connection
  CHECK_FALSE(second.resent_on_fresh_connection);  // the 408 says nothing was processed
  CHECK(server.accepted_connections() == 2);
}

}  // namespace https_client_hardening_test

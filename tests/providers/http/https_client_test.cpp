// The HTTPS client against real local TLS servers: pooling, stale connections,
// verification, deadlines, size caps. No database, runs in about a second.
#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_future.hpp>

#include "providers/http/https_client.hpp"
#include "tests/providers/http/https_test_helpers.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace https_client_test {

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using outbox::providers::http_request;
using outbox::providers::http_response;
using outbox::providers::http_result;
using outbox::providers::https_client;
using outbox::providers::https_client_options;
using outbox::providers::transport_error;
using outbox::test::certificate_pem;
using outbox::test::response_plan;
using outbox::test::test_https_server;
using outbox::test::test_pki;
using outbox::test::test_server_options;
using namespace outbox::test::https;

bool is_reset_or_bad(transport_error e) {
  return e == transport_error::connection_reset || e == transport_error::bad_response;
}

}  // namespace

TEST_CASE("http_response::header ignores case and to_string names every kind") {
  http_response res;
  res.headers = {{"retry-after", "7"}, {"x-a", "1"}, {"x-a", "2"}};
  CHECK(res.header("Retry-After") == "7");
  CHECK(res.header("X-A") == "1");
  CHECK_FALSE(res.header("missing").has_value());
  CHECK(to_string(transport_error::none) == "none");
  CHECK(to_string(transport_error::tls_handshake) == "tls_handshake");
  CHECK(to_string(transport_error::response_too_large) == "response_too_large");
  CHECK(to_string(transport_error::bad_response) == "bad_response");
}

TEST_CASE("a POST arrives with its body and headers and the response comes back") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::reply(201, R"({"ok":true})", {{"X-Request-Id", "abc"}})});
  https_client client{io.get_executor(), client_options()};

  http_request req = post(server.url("/v1/events?pixel=7#fragment"));
  req.headers = {{"Authorization", "Bearer token"}, {"X-Custom", "1"}};
  const http_result result = run_on(io, client.async_send(req));

  REQUIRE(result.ok());
  CHECK(result.error == transport_error::none);
  CHECK(result.maybe_delivered);
  CHECK_FALSE(result.resent_on_fresh_connection);
  CHECK(result.response->status == 201);
  CHECK(result.response->body == R"({"ok":true})");
  CHECK(result.response->header("X-REQUEST-ID") == "abc");
  CHECK(result.response->header("content-type") == "application/json");

  const auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].target == "/v1/events?pixel=7");
  CHECK(seen[0].body == R"({"event":"lead"})");
  CHECK(seen[0].header("Host") == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(seen[0].header("user-agent") == "outbox-dispatcher/0.1");
  CHECK(seen[0].header("content-type") == "application/json");
  CHECK(seen[0].header("content-length") == std::to_string(req.body.size()));
  CHECK(seen[0].header("authorization") == "Bearer token");
  CHECK(seen[0].header("x-custom") == "1");
}

TEST_CASE("error statuses are responses, not transport errors") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::reply(503, "busy"), response_plan::reply(429, "{}", {{"Retry-After", "7"}})});
  https_client client{io.get_executor(), client_options()};

  const auto unavailable = run_on(io, client.async_send(post(server.url("/"))));
  REQUIRE(unavailable.ok());
  CHECK(unavailable.response->status == 503);
  CHECK(unavailable.response->body == "busy");
  const auto limited = run_on(io, client.async_send(post(server.url("/"))));
  REQUIRE(limited.ok());
  CHECK(limited.response->status == 429);
  CHECK(limited.response->header("retry-after") == "7");
}

TEST_CASE("keep-alive: a second request reuses the TCP connection") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  https_client client{io.get_executor(), client_options()};

  REQUIRE(run_on(io, client.async_send(post(server.url("/a")))).ok());
  CHECK(client.idle_connections() == 1);
  REQUIRE(run_on(io, client.async_send(post(server.url("/b")))).ok());

  CHECK(server.accepted_connections() == 1);
  CHECK(server.tls_handshakes() == 1);
  CHECK(client.idle_connections() == 1);
  const auto seen = server.requests();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].connection == seen[1].connection);
}

TEST_CASE("Connection: close from the server is honoured") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.set_fallback([](const outbox::test::recorded_request&) { return response_plan::reply(200).closing(); });
  https_client client{io.get_executor(), client_options()};

  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  CHECK(client.idle_connections() == 0);
  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  CHECK(server.accepted_connections() == 2);
}

TEST_CASE("pool limits: idle_timeout 0 disables reuse and close_idle empties the pool") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};

  SUBCASE("idle_timeout 0") {
    auto opts = client_options();
    opts.idle_timeout = 0ms;
    https_client client{io.get_executor(), opts};
    REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
    CHECK(client.idle_connections() == 0);
    REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
    CHECK(server.accepted_connections() == 2);
  }
  SUBCASE("close_idle") {
    https_client client{io.get_executor(), client_options()};
    REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
    CHECK(client.idle_connections() == 1);
    client.close_idle();
    CHECK(client.idle_connections() == 0);
    REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
    CHECK(server.accepted_connections() == 2);
  }
}

TEST_CASE("a connection the server closed while idle is replaced transparently") {
  test_https_server server{trusted_tls()};  // its own thread, like a remote server
  asio::io_context io;
  auto opts = client_options();
  opts.check_idle_after = 0ms;  // as if it had been idle for longer than the check threshold
  https_client client{io.get_executor(), opts};

  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  CHECK(server.close_idle_connections() == 1);
  const auto second = run_on(io, client.async_send(post(server.url("/"))));

  REQUIRE(second.ok());
  CHECK(second.response->status == 200);
  CHECK_FALSE(second.resent_on_fresh_connection);  // the dead one was skipped, never written to
  CHECK(server.accepted_connections() == 2);
  CHECK(server.request_count() == 2);
  CHECK(client.idle_connections() == 1);
}

// The check is a system call per request; a connection used moments ago is
// reused without it, and a close in between costs the resend-once rule.
TEST_CASE("a connection used within check_idle_after is reused without asking whether the server closed it") {
  test_https_server server{trusted_tls()};  // its own thread, like a remote server
  asio::io_context io;
  auto opts = client_options();
  opts.check_idle_after = 1h;
  https_client client{io.get_executor(), opts};

  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  CHECK(server.close_idle_connections() == 1);
  const auto second = run_on(io, client.async_send(post(server.url("/"))));

  REQUIRE(second.ok());
  CHECK(second.resent_on_fresh_connection);  // written into the closed one first: nobody looked
  CHECK(server.accepted_connections() == 2);
  CHECK(server.request_count() == 2);  // the closed connection delivered nothing
}

TEST_CASE("a reused connection closed before any response byte is retried once on a fresh one") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::reply(200), response_plan::close_without_response()});
  https_client client{io.get_executor(), client_options()};

  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  const auto second = run_on(io, client.async_send(post(server.url("/"))));

  REQUIRE(second.ok());
  CHECK(second.maybe_delivered);
  CHECK(second.resent_on_fresh_connection);  // the server read it once already
  const auto seen = server.requests();
  REQUIRE(seen.size() == 3);  // the dropped one, then its retry
  CHECK(seen[1].connection == seen[0].connection);
  CHECK(seen[2].connection != seen[1].connection);
  CHECK(server.accepted_connections() == 2);
}

// A batch body is written from its own buffer behind the fields (wire_request::large_body).
TEST_CASE("a large body arrives whole over TLS and plain TCP, also when resent on a fresh connection") {
  std::string body = R"({"data":[)";
  for (int i = 0; body.size() < 300 * 1024; ++i) {
    body += (i == 0 ? R"({"event_id":")" : R"(,{"event_id":")") + std::to_string(i) + R"("})";
  }
  body += "]}";
  for (const bool tls : {true, false}) {
    CAPTURE(tls);
    asio::io_context io;
    test_https_server server{io.get_executor(), tls ? trusted_tls() : test_server_options{}};
    server.script({response_plan::reply(200), response_plan::close_without_response(), response_plan::reply(200)});
    https_client client{io.get_executor(), client_options()};
    http_request req = post(server.url("/batch"));
    req.body = body;

    REQUIRE(run_on(io, client.async_send(req)).ok());
    const auto second = run_on(io, client.async_send(req));  // dropped on the reused connection, resent

    REQUIRE(second.ok());
    CHECK(second.resent_on_fresh_connection);
    const auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    for (const auto& r : seen) {
      CHECK(r.body == body);
      CHECK(r.header("content-length") == std::to_string(body.size()));
    }
  }
}

TEST_CASE("a fresh connection closed without a response is reported, not retried") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::close_without_response()});
  https_client client{io.get_executor(), client_options()};

  const auto result = run_on(io, client.async_send(post(server.url("/"))));

  CHECK_FALSE(result.ok());
  CHECK(result.error == transport_error::connection_reset);
  CHECK(result.maybe_delivered);
  CHECK_FALSE(result.resent_on_fresh_connection);
  CHECK(server.request_count() == 1);
  CHECK(server.accepted_connections() == 1);
}

TEST_CASE("a response cut off midway is an error and is never retried") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::reply(200), response_plan::close_mid_response()});
  https_client client{io.get_executor(), client_options()};

  REQUIRE(run_on(io, client.async_send(post(server.url("/")))).ok());
  const auto cut = run_on(io, client.async_send(post(server.url("/"))));  // on the reused connection

  CHECK_FALSE(cut.ok());
  CHECK(is_reset_or_bad(cut.error));
  CHECK(cut.maybe_delivered);
  CHECK(server.request_count() == 2);
  CHECK(server.accepted_connections() == 1);
  CHECK(client.idle_connections() == 0);
}

TEST_CASE("a certificate from an untrusted CA fails the handshake before any request") {
  asio::io_context io;
  test_https_server server{io.get_executor(), {pki().untrusted.issue()}};
  https_client client{io.get_executor(), client_options()};

  const auto result = run_on(io, client.async_send(post(server.url("/"))));

  CHECK(result.error == transport_error::tls_handshake);
  CHECK(contains(result.error_message, "certificate verify failed"));
  CHECK_FALSE(result.maybe_delivered);
  CHECK(server.request_count() == 0);
  CHECK(server.tls_handshakes() == 0);
}

TEST_CASE("a certificate for another host name fails the handshake before any request") {
  asio::io_context io;
  test_https_server server{io.get_executor(), {pki().trusted.issue({.dns = {"wrong.example"}, .ips = {}})}};
  https_client client{io.get_executor(), client_options()};

  SUBCASE("by name") {
    const auto result = run_on(io, client.async_send(post(server.url("/", "localhost"))));
    CHECK(result.error == transport_error::tls_handshake);
    CHECK(contains(result.error_message, "certificate verify failed"));
    CHECK(contains(result.error_message, "hostname mismatch"));
  }
  SUBCASE("by IP address") {
    const auto result = run_on(io, client.async_send(post(server.url("/"))));
    CHECK(result.error == transport_error::tls_handshake);
    CHECK(contains(result.error_message, "certificate verify failed"));
    CHECK(contains(result.error_message, "IP address mismatch"));
  }
  CHECK(server.request_count() == 0);
}

TEST_CASE("a server that never answers times out within request_timeout") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::hang()});
  auto opts = client_options();
  opts.request_timeout = 200ms;
  https_client client{io.get_executor(), opts};

  auto pending = asio::co_spawn(io, client.async_send(post(server.url("/"))), asio::use_future);
  CHECK(run_on(io, server.async_wait_for_requests(1, 5s)));  // woken by the arrival itself
  run_until(io, [&] { return pending.wait_for(0s) == std::future_status::ready; });
  const auto result = pending.get();

  CHECK(result.error == transport_error::timeout);
  CHECK(result.maybe_delivered);
  CHECK(result.duration >= 190ms);
  CHECK(result.duration < 2s);
  CHECK(server.request_count() == 1);
  CHECK_FALSE(run_on(io, server.async_wait_for_requests(2, 20ms)));
}

TEST_CASE("a slow answer inside the deadline succeeds") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::reply(200).after(100ms)});
  https_client client{io.get_executor(), client_options()};

  const auto result = run_on(io, client.async_send(post(server.url("/"))));

  REQUIRE(result.ok());
  CHECK(result.duration >= 100ms);
}

TEST_CASE("a server that accepts TCP but never speaks TLS times out in the handshake") {
  asio::io_context io;
  // The kernel completes the TCP handshake from the backlog; nobody ever answers.
  asio::ip::tcp::acceptor silent{io, {asio::ip::make_address_v4("127.0.0.1"), 0}};
  auto opts = client_options();
  opts.handshake_timeout = 200ms;
  https_client client{io.get_executor(), opts};

  const auto url = "https://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/";
  const auto result = run_on(io, client.async_send(post(url)));

  CHECK(result.error == transport_error::timeout);
  CHECK(contains(result.error_message, "handshake"));
  CHECK_FALSE(result.maybe_delivered);
}

TEST_CASE("responses larger than max_response_bytes are refused") {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  server.script({response_plan::reply(200, std::string(1024, 'a')), response_plan::reply(200, std::string(4096, 'a'))});
  auto opts = client_options();
  opts.max_response_bytes = 1024;
  https_client client{io.get_executor(), opts};

  const auto at_limit = run_on(io, client.async_send(post(server.url("/"))));
  REQUIRE(at_limit.ok());
  CHECK(at_limit.response->body.size() == 1024);
  const auto too_large = run_on(io, client.async_send(post(server.url("/"))));
  CHECK_FALSE(too_large.ok());
  CHECK(too_large.error == transport_error::response_too_large);
  CHECK(client.idle_connections() == 0);

  outbox::providers::header_list big_headers;
  for (int i = 0; i < 20; ++i) big_headers.emplace_back("X-Big-" + std::to_string(i), std::string(4096, 'h'));
  server.script({response_plan::reply(200, "{}", big_headers)});  // 80 KiB of header
  const auto huge_header = run_on(io, client.async_send(post(server.url("/"))));
  CHECK(huge_header.error == transport_error::response_too_large);
}

TEST_CASE("a closed port is a connect error") {
  asio::io_context io;
  std::uint16_t port = 0;
  {
    asio::ip::tcp::acceptor probe{io, {asio::ip::make_address_v4("127.0.0.1"), 0}};
    port = probe.local_endpoint().port();
  }  // closed again: connecting is refused
  https_client client{io.get_executor(), client_options()};

  const auto result = run_on(io, client.async_send(post("https://127.0.0.1:" + std::to_string(port) + "/")));

  CHECK(result.error == transport_error::connect);
  CHECK_FALSE(result.maybe_delivered);
}

TEST_CASE("a name that does not resolve is a resolve error (or a timeout where DNS is unreachable)") {
  asio::io_context io;
  auto opts = client_options();
  opts.connect_timeout = 500ms;
  https_client client{io.get_executor(), opts};

  const auto result = run_on(io, client.async_send(post("https://no-such-host.invalid/")));

  CHECK((result.error == transport_error::resolve || result.error == transport_error::timeout));
  CHECK(result.duration < 2s);
  CHECK_FALSE(result.maybe_delivered);
}

TEST_CASE("unusable requests are bad_url and never touch the network") {
  asio::io_context io;
  https_client client{io.get_executor(), client_options()};
  const std::vector<std::string> urls = {
      "",
      "ftp://example.com/",
      "example.com/path",
      "https://",
      "https:///path",
      "https://user:secret@example.com/",
      "https://example.com:0/",
      "https://example.com:99999/",
      "https://example.com:12ab/",
      "https://exa mple.com/",
      "https://[::1/",
      "https://bad_host!/",
  };
  for (const auto& url : urls) {
    CAPTURE(url);
    const auto result = run_on(io, client.async_send(post(url)));
    CHECK(result.error == transport_error::bad_url);
    CHECK_FALSE(result.maybe_delivered);
    CHECK_FALSE(contains(result.error_message, "secret"));
  }

  http_request injected = post("https://127.0.0.1:1/");
  injected.headers = {{"X-Evil", "a\r\nInjected: yes"}};
  CHECK(run_on(io, client.async_send(injected)).error == transport_error::bad_url);
  http_request bad_method = post("https://127.0.0.1:1/");
  bad_method.method = "PO ST";
  CHECK(run_on(io, client.async_send(bad_method)).error == transport_error::bad_url);
}

TEST_CASE("an extra CA file that cannot be loaded stops construction") {
  asio::io_context io;
  auto opts = client_options();
  opts.extra_ca_file = "/nonexistent/outbox-ca.pem";
  CHECK_THROWS_AS(https_client(io.get_executor(), opts), std::runtime_error);
}

TEST_CASE("plain http:// works too") {
  asio::io_context io;
  test_https_server server{io.get_executor(), test_server_options{}};
  https_client client{io.get_executor(), client_options()};

  REQUIRE(server.url("/x").starts_with("http://"));
  const auto first = run_on(io, client.async_send(post(server.url("/x"))));
  const auto second = run_on(io, client.async_send(post(server.url("/y"))));

  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(server.accepted_connections() == 1);
  CHECK(server.tls_handshakes() == 0);
  CHECK(server.requests().at(1).target == "/y");
}

TEST_CASE("50 concurrent requests all succeed") {
  constexpr std::size_t n = 50;
  test_https_server server{trusted_tls()};  // its own thread
  asio::io_context io;
  https_client client{io.get_executor(), client_options()};

  std::vector<std::future<http_result>> results;
  for (std::size_t i = 0; i < n; ++i) {
    results.push_back(asio::co_spawn(
        io, client.async_send(post(server.url("/batch"), R"({"n":)" + std::to_string(i) + "}")), asio::use_future));
  }
  std::thread client_thread{[&io] { io.run_for(20s); }};
  CHECK(server.wait_for_requests(n, 10s));
  client_thread.join();

  for (auto& f : results) {
    REQUIRE(f.wait_for(0s) == std::future_status::ready);
    const auto result = f.get();
    CHECK(result.ok());
    CHECK(result.error_message == "");
  }
  std::set<std::string> bodies;
  for (const auto& req : server.requests()) bodies.insert(req.body);
  CHECK(bodies.size() == n);
  CHECK(server.accepted_connections() == n);  // all started before any finished
  CHECK(client.idle_connections() == n);
}

}  // namespace https_client_test

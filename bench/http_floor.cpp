// http-floor: the cheapest one-event-per-request exchange this machine allows,
// as the floor under the dispatcher's CPU per webhook request. A bare client
// (one thread, one io_context, Asio + OpenSSL, no database, no JSON, no
// signing, no response parsing beyond Content-Length) POSTs the webhook rows'
// bytes over --concurrency keep-alive TLS connections to the same lean sink
// the drain uses (or, with --sink receiver, to crm's Node receiver, its
// signature check off: these requests carry a fixed signature), and reports its
// own thread's CPU per request, user and system apart. Whatever the dispatcher spends above this is its own work;
// this much it cannot avoid with the sink on the same two cores.
#include <sys/resource.h>
#include <time.h>

#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "bench/lean_sink.hpp"
#include "bench/receiver_process.hpp"
#include "bench/support.hpp"
#include "bench/workload.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::bench {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using json = nlohmann::json;

struct thread_cpu {
  double user = 0;
  double system = 0;
};

thread_cpu this_thread_cpu() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return {seconds(u.ru_utime), seconds(u.ru_stime)};
}

// A signed webhook request's shape (providers/webhook/webhook_provider.cpp): the same
// header names and sizes, a fixed signature.
std::string request_bytes(std::int64_t i, std::uint16_t port) {
  const std::string body = webhook_payload(i);
  return "POST /hook HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nUser-Agent: outbox-dispatcher\r\ncontent-type: application/json\r\nwebhook-id: floor-" +
         std::to_string(i) +
         "\r\nwebhook-timestamp: 1767225600\r\nwebhook-signature: v1,"
         "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDDX0bH5A=\r\nidempotency-key: floor-" +
         std::to_string(i) + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct floor_run {
  std::int64_t total = 0;
  std::int64_t next = 0;
  std::int64_t done = 0;
  std::int64_t failures = 0;
};

asio::awaitable<void> async_client(floor_run& run, ssl::context& ctx, tcp::endpoint at) {
  auto executor = co_await asio::this_coro::executor;
  ssl::stream<tcp::socket> stream(executor, ctx);
  SSL_set_tlsext_host_name(stream.native_handle(), "localhost");
  stream.set_verify_callback(ssl::host_name_verification("localhost"));
  co_await stream.next_layer().async_connect(at, asio::use_awaitable);
  stream.next_layer().set_option(tcp::no_delay(true));
  co_await stream.async_handshake(ssl::stream_base::client, asio::use_awaitable);
  std::string buffer;
  std::vector<char> chunk(16 * 1024);
  while (run.next < run.total) {
    const std::string request = request_bytes(run.next++, at.port());
    co_await asio::async_write(stream, asio::buffer(request), asio::use_awaitable);
    // Read one response: headers, then Content-Length bytes.
    for (;;) {
      const auto header_end = buffer.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const auto cl = buffer.find("Content-Length: ");
        const std::size_t length = cl < header_end ? std::stoul(buffer.substr(cl + 16)) : 0;
        if (buffer.size() >= header_end + 4 + length) {
          if (buffer.compare(0, 12, "HTTP/1.1 200") != 0) ++run.failures;
          buffer.erase(0, header_end + 4 + length);
          break;
        }
      }
      const std::size_t n = co_await stream.async_read_some(asio::buffer(chunk), asio::use_awaitable);
      buffer.append(chunk.data(), n);
    }
    ++run.done;
  }
}

}  // namespace

json run_http_floor(const options& o) {
  test::test_ca ca;
  std::unique_ptr<event_sink> sink_owner;
  if (o.sink == "receiver")
    sink_owner = std::make_unique<receiver_process>(ca.issue(), "", o.log_dir + "/receiver-floor.log");
  else sink_owner = std::make_unique<lean_sink>(ca.issue(), o.sink_threads, lean_sink::protocol::webhook);
  event_sink& sink = *sink_owner;
  const int connections = o.concurrency.value_or(16);  // the dispatcher's default per destination
  floor_run run;
  run.total = o.rows;

  asio::io_context io{1};
  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(ca.cert_pem_file().string());
  ctx.set_verify_mode(ssl::verify_peer);
  const tcp::endpoint at{asio::ip::make_address("127.0.0.1"), sink.port()};
  std::exception_ptr failed;
  for (int i = 0; i < connections; ++i) {
    asio::co_spawn(io, async_client(run, ctx, at), [&](std::exception_ptr e) {
      if (e && !failed) failed = e;
    });
  }
  const double process0 = self_cpu_seconds();
  const double receiver0 = sink.process() > 0 ? sample_process(sink.process()).cpu_seconds : 0.0;
  const thread_cpu cpu0 = this_thread_cpu();
  const auto t0 = steady::now();
  io.run();  // on this thread: its CPU is the client's alone (the sink runs on its own threads)
  const double seconds = seconds_between(t0, steady::now());
  const thread_cpu cpu1 = this_thread_cpu();
  const double process1 = self_cpu_seconds();
  const double receiver1 = sink.process() > 0 ? sample_process(sink.process()).cpu_seconds : 0.0;
  if (failed) std::rethrow_exception(failed);
  if (run.done == 0) throw std::invalid_argument("http-floor: no request was sent (--rows must be at least 1)");

  const double n = static_cast<double>(run.done);
  const double user_us = (cpu1.user - cpu0.user) / n * 1e6;
  const double system_us = (cpu1.system - cpu0.system) / n * 1e6;
  json out;
  out["requests"] = run.done;
  out["non_200_responses"] = run.failures;
  out["connections"] = connections;
  out["seconds"] = seconds;
  out["requests_per_second"] = n / seconds;
  out["client_cpu_us_per_request"] = user_us + system_us;
  out["client_user_us_per_request"] = user_us;
  out["client_system_us_per_request"] = system_us;
  out["sink"] = o.sink;
  out["sink_cpu_us_per_request"] =
      sink.process() > 0 ? (receiver1 - receiver0) / n * 1e6
                         : ((process1 - process0) - (cpu1.user - cpu0.user) - (cpu1.system - cpu0.system)) / n * 1e6;
  out["sink_requests"] = sink.requests();
  note("http-floor: " + fmt(n / seconds) + " requests/s, client " + fmt(user_us + system_us, 1) + " us/request (user " +
       fmt(user_us, 1) + ", system " + fmt(system_us, 1) + ")");
  return out;
}

}  // namespace outbox::bench

// A local HTTPS endpoint for the demo: trusts nothing but its own throwaway CA,
// prints every request it receives, and answers 200 — except the first request
// to /flaky, which gets a 503 so the demo shows a retry.
//   usage: demo_sink <ca-pem-out> <port-file-out>
#include <pthread.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>

#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: demo_sink <ca-pem-out> <port-file-out>\n";
    return 2;
  }
  using namespace outbox::test;
  // Block the stop signals before the server thread starts, then wait for one here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  test_ca ca("outbox demo CA");
  ca.write_cert_pem(argv[1]);
  test_server_options opts;
  opts.certificate = ca.issue();
  test_https_server server(opts);

  std::mutex mu;
  std::set<std::string> flaky_seen;
  server.set_fallback([&](const recorded_request& r) {
    std::lock_guard lock(mu);
    const auto key = r.header("webhook-id").value_or("?");
    const bool fail = r.target == "/flaky" && flaky_seen.insert(key).second;
    std::cout << "sink: " << r.method << " " << r.target << " webhook-id=" << key << " body=" << r.body
              << (fail ? "  -> 503 (first try)" : "  -> 200") << std::endl;
    return fail ? response_plan::reply(503, R"({"error":"temporarily unavailable"})")
                : response_plan::reply(200, R"({"ok":true})");
  });
  std::ofstream(argv[2]) << server.port() << "\n";

  int signo = 0;
  sigwait(&stop_signals, &signo);
  std::cout << "sink: received " << server.request_count() << " request(s)" << std::endl;
  return 0;
}

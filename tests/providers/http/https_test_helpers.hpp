#pragma once
// Shared by the HTTPS client tests: a throwaway PKI, client options that trust
// it, and ways to drive an io_context that also runs a test server.
#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "providers/http/https_client.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::test::https {

using namespace std::chrono_literals;

inline const test_pki& pki() {
  static const test_pki instance;
  return instance;
}

inline test_server_options trusted_tls() {
  static const certificate_pem cert = pki().trusted.issue();  // localhost, 127.0.0.1
  return {cert};
}

inline providers::https_client_options client_options() {
  providers::https_client_options opts;
  opts.extra_ca_file = pki().trusted.cert_pem_file().string();
  opts.connect_timeout = 2s;
  opts.handshake_timeout = 2s;
  opts.request_timeout = 2s;
  return opts;
}

inline providers::http_request post(std::string url, std::string body = R"({"event":"lead"})") {
  providers::http_request req;
  req.url = std::move(url);
  req.body = std::move(body);
  return req;
}

// Drives `io` on this thread until `done()` holds. A server sharing the
// io_context keeps work pending, so io.run() alone would never return.
inline void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("test did not finish in time");
    if (io.stopped()) io.restart();
    io.run_one_for(100ms);
  }
}

template <class T>
[[nodiscard]] bool is_ready(const std::future<T>& f) {
  return f.wait_for(0s) == std::future_status::ready;
}

template <class T>
T run_on(boost::asio::io_context& io, boost::asio::awaitable<T> task) {
  auto result = boost::asio::co_spawn(io, std::move(task), boost::asio::use_future);
  run_until(io, [&] { return is_ready(result); });
  return result.get();
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace outbox::test::https

#pragma once
// Message helpers of test_https_server: what it records of a request, the
// response a plan asks for, and a connection that answers nothing.

#include <array>
#include <string>
#include <string_view>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include "providers/text.hpp"
#include "tests/support/test_https_server.hpp"

namespace outbox::test::detail {

namespace beast = boost::beast;
namespace http = beast::http;

[[nodiscard]] inline recorded_request to_record(http::request<http::string_body>&& msg, std::size_t connection) {
  recorded_request r;
  r.method = std::string(msg.method_string());
  r.target = std::string(msg.target());
  for (const auto& field : msg)
    r.headers.emplace_back(providers::ascii_lowercase(field.name_string()), std::string(field.value()));
  r.body = std::move(msg.body());
  r.arrived_at = std::chrono::steady_clock::now();
  r.connection = connection;
  return r;
}

[[nodiscard]] inline http::response<http::string_body> make_response(const response_plan& plan,
                                                                     bool client_keeps_alive) {
  http::response<http::string_body> res;
  res.version(11);
  res.result(static_cast<unsigned>(plan.status));
  for (const auto& [name, value] : plan.headers) res.insert(name, value);
  if (!plan.body.empty() && res.find(http::field::content_type) == res.end())
    res.set(http::field::content_type, "application/json");
  res.body() = plan.body;
  res.keep_alive(plan.keep_alive && client_keeps_alive);
  res.prepare_payload();
  return res;
}

// Holds the connection open, answering nothing, until the client or stop() closes it.
template <class Stream>
boost::asio::awaitable<void> async_hang(Stream& stream) {
  std::array<char, 512> scratch{};
  for (;;) {
    auto [ec, n] = co_await stream.async_read_some(boost::asio::buffer(scratch),
                                                   boost::asio::as_tuple(boost::asio::use_awaitable));
    if (ec) co_return;
  }
}

}  // namespace outbox::test::detail

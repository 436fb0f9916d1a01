// The request bytes the client writes: the same as Beast's own serializer.
#include <sstream>
#include <string>

#include <boost/beast/http/write.hpp>
#include <doctest/doctest.h>

#include "providers/http_request_builder.hpp"

using namespace outbox::providers;

namespace {

std::string beast_bytes(const detail::request_message& msg) {
  std::ostringstream out;
  out << msg;
  return out.str();
}

detail::target_url url_of(const std::string& text) {
  auto parsed = detail::parse_url(text);
  REQUIRE(parsed.url.has_value());
  return *parsed.url;
}

}  // namespace

TEST_CASE("wire_bytes writes a request exactly as Beast's serializer does") {
  http_request post;
  post.method = "POST";
  post.url = "https://api.example.com:8443/v1/events?token=x";
  post.headers = {{"content-type", "application/json"}, {"webhook-id", "key-1"}, {"X-Extra", "a b"}};
  post.body = R"({"a":1})";
  detail::request_message msg;
  REQUIRE_FALSE(detail::build_message(post, url_of(post.url), msg).has_value());
  CHECK(detail::wire_bytes(msg) == beast_bytes(msg));
  CHECK(detail::wire_bytes(msg).starts_with("POST /v1/events?token=x HTTP/1.1\r\n"));
  CHECK(detail::wire_bytes(msg).ends_with("\r\n\r\n{\"a\":1}"));

  http_request get;
  get.method = "GET";
  get.url = "https://api.example.com/status";
  detail::request_message plain;
  REQUIRE_FALSE(detail::build_message(get, url_of(get.url), plain).has_value());
  CHECK(detail::wire_bytes(plain) == beast_bytes(plain));
  CHECK(detail::wire_bytes(plain).ends_with("\r\n\r\n"));
}

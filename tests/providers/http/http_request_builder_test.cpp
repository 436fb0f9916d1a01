// The request bytes the client writes: the same as Beast's own serializer
// writes for the message the client used to build (fields in order, then Host,
// User-Agent and Content-Type unless given, then prepare_payload()).
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "providers/http/http_request_builder.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace http_request_builder_test {

using namespace outbox::providers;
namespace http = boost::beast::http;

namespace {

// What Beast writes for `req`: the reference the wire builder must match.
std::string beast_bytes(const http_request& req, const detail::target_url& url) {
  http::request<http::string_body> msg;
  msg.method_string(req.method);
  msg.target(url.target);
  msg.version(11);
  for (const auto& [name, value] : req.headers) {
    if (outbox::providers::iequals(name, "host") || outbox::providers::iequals(name, "content-length") ||
        outbox::providers::iequals(name, "transfer-encoding"))
      continue;
    msg.insert(name, value);
  }
  msg.set(http::field::host, url.host_header);
  if (msg.find(http::field::user_agent) == msg.end()) msg.set(http::field::user_agent, "outbox-dispatcher/0.1");
  if (!req.body.empty() && msg.find(http::field::content_type) == msg.end())
    msg.set(http::field::content_type, "application/json");
  msg.body() = req.body;
  msg.prepare_payload();
  std::ostringstream out;
  out << msg;
  return out.str();
}

detail::target_url url_of(const std::string& text) {
  auto parsed = detail::parse_url(text);
  REQUIRE(parsed.url.has_value());
  return *parsed.url;
}

// Everything the client writes, in order: the fields' buffer, then a large body's own.
std::string wire_of(http_request req) {
  detail::wire_request out;
  const auto problem = detail::build_wire(req, url_of(req.url), out);
  REQUIRE_FALSE(problem.has_value());
  return out.bytes + out.large_body;
}

http_request request(std::string method, std::string url, header_list headers = {}, std::string body = {}) {
  http_request r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

// build_wire of a request built in place (it may take the request's body).
std::optional<std::string> build_wire(http_request req, const detail::target_url& url, detail::wire_request& out) {
  return detail::build_wire(req, url, out);
}

}  // namespace

TEST_CASE("build_wire writes a request exactly as Beast's serializer does") {
  const http_request post =
      request("POST", "https://api.example.com:8443/v1/events?token=x",
              {{"content-type", "application/json"}, {"webhook-id", "key-1"}, {"X-Extra", "a b"}}, R"({"a":1})");
  CHECK(wire_of(post) == beast_bytes(post, url_of(post.url)));
  CHECK(wire_of(post).starts_with("POST /v1/events?token=x HTTP/1.1\r\n"));
  CHECK(wire_of(post).ends_with("\r\n\r\n{\"a\":1}"));

  const http_request get = request("GET", "https://api.example.com/status");
  CHECK(wire_of(get) == beast_bytes(get, url_of(get.url)));
  CHECK(wire_of(get).ends_with("\r\n\r\n"));
  CHECK(wire_of(get).find("Content-Length") == std::string::npos);

  SUBCASE("our framing headers replace the caller's, whatever their case") {
    const http_request r = request("POST", "https://[::1]:9443/x",
                                   {{"HOST", "evil.example"},
                                    {"Content-Length", "999"},
                                    {"transfer-encoding", "chunked"},
                                    {"User-Agent", "crm/2"},
                                    {"Content-Type", "text/plain"}},
                                   "hello");
    CHECK(wire_of(r) == beast_bytes(r, url_of(r.url)));
    CHECK(wire_of(r).find("evil") == std::string::npos);
    CHECK(wire_of(r).find("Host: [::1]:9443\r\n") != std::string::npos);
    CHECK(wire_of(r).find("Content-Length: 5\r\n") != std::string::npos);
    CHECK(wire_of(r).find("outbox-dispatcher") == std::string::npos);  // the caller's User-Agent stays
  }
  SUBCASE("empty bodies: a Content-Length of 0 only where the method expects a body") {
    for (const char* method : {"POST", "PUT", "OPTIONS", "DELETE", "HEAD", "PATCH", "post", "TRACE"}) {
      CAPTURE(method);
      const http_request r = request(method, "https://h.example/p");
      CHECK(wire_of(r) == beast_bytes(r, url_of(r.url)));
    }
  }
  SUBCASE("values lose surrounding spaces and tabs, as in Beast's fields; duplicates and empties stay") {
    const http_request r =
        request("PATCH", "https://h.example/p?q=1#frag",
                {{"X-A", "  padded\t "}, {"X-A", "second"}, {"X-Empty", ""}, {"X-Blank", " \t "}}, "{}");
    CHECK(wire_of(r) == beast_bytes(r, url_of(r.url)));
    CHECK(wire_of(r).find("X-A: padded\r\nX-A: second\r\n") != std::string::npos);
  }
  SUBCASE("a repeated name joins the earlier field of that name, as Beast's insert() keeps them") {
    const http_request r =
        request("POST", "https://h.example/p", {{"X-A", "1"}, {"X-B", "2"}, {"x-a", "3"}, {"X-C", "4"}}, "{}");
    CHECK(wire_of(r) == beast_bytes(r, url_of(r.url)));
    CHECK(wire_of(r).find("X-A: 1\r\nx-a: 3\r\nX-B: 2\r\nX-C: 4\r\n") != std::string::npos);
  }
  SUBCASE("a large body keeps its own buffer, moved from the request; a small one follows the fields") {
    const std::string batch(detail::wire_body_copy_limit + 1, 'x');
    http_request large = request("POST", "https://h.example/p", {}, batch);
    const std::string expected = beast_bytes(large, url_of(large.url));
    const char* const body_storage = large.body.data();
    detail::wire_request out;
    REQUIRE_FALSE(detail::build_wire(large, url_of(large.url), out).has_value());
    CHECK(out.large_body == batch);
    CHECK(out.large_body.data() == body_storage);  // moved, not copied
    CHECK(large.body.empty());
    CHECK(out.bytes.ends_with("Content-Length: " + std::to_string(batch.size()) + "\r\n\r\n"));
    CHECK(out.bytes + out.large_body == expected);

    http_request small = request("POST", "https://h.example/p", {}, std::string(detail::wire_body_copy_limit, 'y'));
    REQUIRE_FALSE(detail::build_wire(small, url_of(small.url), out).has_value());
    CHECK(out.large_body.empty());  // a wire reused for a small request holds nothing of the last one
    CHECK(out.bytes == beast_bytes(small, url_of(small.url)));
  }
  SUBCASE("an over-long value in a header we replace anyway is no reason to refuse") {
    const http_request r = request("POST", "https://h.example/p", {{"Host", std::string(70000, 'h')}}, "{}");
    CHECK(wire_of(r) == beast_bytes(r, url_of(r.url)));
  }
}

TEST_CASE("build_wire refuses what cannot be sent safely, without echoing values") {
  detail::wire_request out;
  const auto url = url_of("https://h.example/p");
  CHECK(build_wire(request("GE T", "https://h.example/p"), url, out) == "invalid HTTP method");
  CHECK(build_wire(request("POST", "https://h.example/p", {{"bad name", "v"}}), url, out) == "invalid header name");
  CHECK(build_wire(request("POST", "https://h.example/p", {{"X-Injected", "a\r\nEvil: 1"}}), url, out) ==
        "invalid value for header 'X-Injected'");
  CHECK(build_wire(request("POST", "https://h.example/p", {{"X-Lf", "a\nb"}}), url, out) ==
        "invalid value for header 'X-Lf'");
  CHECK(build_wire(request("POST", "https://h.example/p", {{"X-Cr", "a\rb"}}), url, out) ==
        "invalid value for header 'X-Cr'");
  CHECK(build_wire(request("POST", "https://h.example/p", {{"X-Nul", std::string("a\0b", 3)}}), url, out) ==
        "invalid value for header 'X-Nul'");
  CHECK(build_wire(request("POST", "https://h.example/p", {{"X-Big", std::string(70000, 'v')}}), url, out) ==
        "header 'X-Big' is too long");
  CHECK(build_wire(request("TRACE", "https://h.example/p", {}, "body"), url, out) ==
        "a TRACE request cannot carry a body");
  CHECK(build_wire(request("HEAD", "https://h.example/p"), url, out) == std::nullopt);
  CHECK(out.head);
}

}  // namespace http_request_builder_test

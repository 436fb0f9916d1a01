// The response reader on its own (no sockets): framing, 1xx skipping, caps,
// and that splitting the bytes differently never changes the answer.
#include <string>

#include <doctest/doctest.h>
#include <boost/beast/http/error.hpp>

#include "providers/http/http_response_reader.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace http_response_reader_test {

namespace {

using namespace outbox::providers;
namespace http = boost::beast::http;

const std::string chunked_head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string repeated(const std::string& piece, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += piece;
  return out;
}

// Reads `bytes` in one go and byte by byte; both must agree.
response_read read(const std::string& bytes, const response_limits& limits = {}, bool head = false) {
  const response_read whole = read_http_response(bytes, limits, head);
  const response_read bytewise = read_http_response(bytes, limits, head, 1);
  CHECK(whole.error == bytewise.error);
  REQUIRE(whole.response.has_value() == bytewise.response.has_value());
  if (whole.response) {
    CHECK(whole.response->status == bytewise.response->status);
    CHECK(whole.response->headers == bytewise.response->headers);
    CHECK(whole.response->body == bytewise.response->body);
    CHECK(whole.keep_alive == bytewise.keep_alive);
  }
  return whole;
}

}  // namespace

TEST_CASE("reader: a plain response with Content-Length") {
  const auto r = read("HTTP/1.1 201 Created\r\nX-Request-Id: abc\r\nContent-Length: 5\r\n\r\nhello");
  REQUIRE(r.response);
  CHECK(r.response->status == 201);
  CHECK(r.response->body == "hello");
  CHECK(r.response->header("x-request-id") == "abc");
  CHECK(r.response->headers.front().first == "x-request-id");  // names lower-cased
  CHECK(r.keep_alive);
  CHECK(r.interim_responses == 0);
}

TEST_CASE("reader: chunked bodies with extensions and trailers") {
  const auto r = read(chunked_head + "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n");
  REQUIRE(r.response);
  CHECK(r.response->body == "hello world");
  CHECK(r.response->header("x-checksum") == "abc");  // trailers follow the header fields
  CHECK(r.keep_alive);
}

TEST_CASE("reader: 1xx interim responses are skipped and 101 is refused") {
  const auto r = read(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  REQUIRE(r.response);
  CHECK(r.response->status == 200);
  CHECK(r.response->body == "ok");
  CHECK_FALSE(r.response->header("link").has_value());
  CHECK(r.interim_responses == 2);

  CHECK(read("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n").error == response_error::switching_protocols);
  response_limits limits;
  limits.max_interim = 3;
  CHECK(read(repeated("HTTP/1.1 100 Continue\r\n\r\n", 3) + "HTTP/1.1 204 No Content\r\n\r\n", limits).response);
  CHECK(read(repeated("HTTP/1.1 100 Continue\r\n\r\n", 4) + "HTTP/1.1 204 No Content\r\n\r\n", limits).error ==
        response_error::too_many_interim);
}

TEST_CASE("reader: header field count is capped") {
  const auto fields = [](std::size_t n) { return "HTTP/1.1 200 OK\r\n" + repeated("a:b\r\n", n) + "\r\n"; };
  CHECK(read(fields(100)).response);
  CHECK(read(fields(101)).error == response_error::too_many_fields);
  CHECK(read(fields(10'000)).error == response_error::too_many_fields);
  // Trailers count too.
  CHECK(read(chunked_head + "0\r\n" + repeated("t:x\r\n", 100) + "\r\n").error == response_error::too_many_fields);
}

TEST_CASE("reader: header bytes are capped over interim responses and trailers together") {
  response_limits limits;
  limits.max_header_bytes = 4096;
  const std::string big_field = "X-Pad: " + std::string(1500, 'p') + "\r\n";
  CHECK(read("HTTP/1.1 200 OK\r\n" + repeated(big_field, 3) + "Content-Length: 0\r\n\r\n", limits).error ==
        response_error::header_too_large);
  CHECK(read("HTTP/1.1 103 Early Hints\r\n" + big_field + "\r\nHTTP/1.1 103 Early Hints\r\n" + big_field +
                 "\r\nHTTP/1.1 200 OK\r\n" + big_field + "Content-Length: 0\r\n\r\n",
             limits)
            .error == response_error::header_too_large);
  CHECK(read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + repeated(big_field, 2) + "\r\n0\r\n" + big_field +
                 "\r\n",
             limits)
            .error == response_error::header_too_large);
  CHECK(read("HTTP/1.1 200 OK\r\n" + repeated(big_field, 2) + "Content-Length: 0\r\n\r\n", limits).response);
}

TEST_CASE("reader: chunk extensions and chunk lines are capped") {
  CHECK(read(chunked_head + "2;" + std::string(255, 'e') + "\r\nok\r\n0\r\n\r\n").response);
  CHECK(read(chunked_head + "2;" + std::string(256, 'e') + "\r\nok\r\n0\r\n\r\n").error ==
        response_error::chunk_extension_too_long);
  CHECK(read(chunked_head + "0;" + std::string(300, 'e') + "\r\n\r\n").error ==
        response_error::chunk_extension_too_long);
  // Lines that never end stop at the buffer cap, long before 10 MB are held.
  const auto endless_extension = read_http_response(chunked_head + "5;" + std::string(10 << 20, 'e'), {});
  CHECK(endless_extension.error == response_error::chunk_metadata_too_large);
  const auto endless_trailers = read_http_response(chunked_head + "0\r\n" + repeated("t:x\r\n", 200'000), {});
  CHECK(endless_trailers.error == response_error::chunk_metadata_too_large);
}

TEST_CASE("reader: body cap and framing errors") {
  response_limits limits;
  limits.max_body_bytes = 4;
  CHECK(read("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", limits).response);
  CHECK(read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcde", limits).error == http::error::body_limit);
  CHECK(read(chunked_head + "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", limits).error == http::error::body_limit);
  CHECK(read("HTTP/1.1 200 OK\r\n\r\nabcde", limits).error == http::error::body_limit);  // read to EOF
  CHECK(read(chunked_head + "zz\r\n\r\n").error == http::error::bad_chunk);
  CHECK(read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").error == http::error::partial_message);
  CHECK(read("garbage\r\n\r\n").error);
}

TEST_CASE("reader: end of stream and keep-alive") {
  CHECK(read("").error == http::error::end_of_stream);  // nothing at all: the stale keep-alive case
  CHECK(read("HTTP/1.1 100 Continue\r\n\r\n").error == http::error::partial_message);
  const auto to_eof = read("HTTP/1.1 200 OK\r\n\r\nuntil close");
  REQUIRE(to_eof.response);
  CHECK(to_eof.response->body == "until close");
  CHECK_FALSE(to_eof.keep_alive);
  CHECK_FALSE(read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").keep_alive);
  CHECK_FALSE(read("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n").keep_alive);  // out of step
  const auto head = read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", {}, true);
  REQUIRE(head.response);
  CHECK(head.response->body.empty());
  CHECK(head.keep_alive);
}

TEST_CASE("reader: errors read well in messages") {
  const response_limits limits;
  CHECK(describe_read_error(response_error::too_many_fields, limits) == "more than 100 header fields");
  CHECK(describe_read_error(response_error::chunk_extension_too_long, limits) ==
        "chunk extension longer than 256 bytes");
  CHECK(describe_read_error(http::error::body_limit, limits) == "body exceeds 1048576 bytes");
  CHECK(is_size_refusal(response_error::header_too_large));
  CHECK_FALSE(is_size_refusal(response_error::switching_protocols));
}

}  // namespace http_response_reader_test

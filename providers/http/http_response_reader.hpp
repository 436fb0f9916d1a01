#pragma once
// Reads one HTTP/1.1 response from raw bytes, with every cap a hostile server
// could try to get around. The HTTPS client feeds it from the socket and the
// fuzz target feeds it from memory: both go through this one parser set-up.
//
// Interim 1xx responses (100 Continue, 103 Early Hints, ...) are read and
// skipped, so the final response and the connection stay in step; 101
// Switching Protocols is an error (we never ask to upgrade).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include "providers/http/http_types.hpp"

namespace outbox::providers {

struct response_limits {
  std::size_t max_body_bytes = 1 << 20;
  // Status lines and fields of the whole exchange: interim responses, the
  // final header and its trailers together. Also caps the unparsed bytes held
  // at any time, so a chunk-size line or a trailer section never grows past it.
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_fields = 100;           // per response, trailers included
  std::size_t max_chunk_extension = 256;  // ";name=value..." after a chunk size
  std::size_t max_interim = 8;            // 1xx responses before the final one
};

// Our own refusals; Beast's parse errors (bad_chunk, body_limit, ...) come back as they are.
enum class response_error {
  header_too_large = 1,      // over max_header_bytes (status lines, fields, trailers)
  too_many_fields,           // over max_fields
  chunk_extension_too_long,  // over max_chunk_extension
  chunk_metadata_too_large,  // a chunk-size line or the trailer section over max_header_bytes
  switching_protocols,       // 101: the server wants a protocol we did not ask for
  too_many_interim,          // over max_interim 1xx responses
};

[[nodiscard]] const boost::system::error_category& response_error_category();
[[nodiscard]] boost::system::error_code make_error_code(response_error e);

// True for a refusal that is about size (the rest are malformed or unexpected responses).
[[nodiscard]] bool is_size_refusal(const boost::system::error_code& ec);
// "more than 100 header fields", "body exceeds 1048576 bytes", ...: for error texts.
[[nodiscard]] std::string describe_read_error(const boost::system::error_code& ec, const response_limits& limits);

// Incremental reader: prepare(), read into it, commit(n); repeat until done()
// or an error. Not reusable: one reader per response.
class http_response_reader {
 public:
  explicit http_response_reader(const response_limits& limits, bool head_request = false);
  ~http_response_reader();
  http_response_reader(const http_response_reader&) = delete;
  http_response_reader& operator=(const http_response_reader&) = delete;

  // Room for the next read (never past the unparsed-bytes cap).
  [[nodiscard]] boost::asio::mutable_buffer prepare(std::size_t max_read = 64 * 1024);
  // Parses the `n` bytes just read into prepare()'s room. An error is final.
  [[nodiscard]] boost::system::error_code commit(std::size_t n);
  // The peer ended the stream cleanly; completes a read-until-close body.
  [[nodiscard]] boost::system::error_code commit_eof();

  [[nodiscard]] bool done() const;      // a final (non-1xx) response is complete
  [[nodiscard]] bool got_some() const;  // at least one byte arrived
  // Done, the server allows another request, and no byte beyond the response
  // arrived (extra bytes mean the server is out of step).
  [[nodiscard]] bool keep_alive() const;
  [[nodiscard]] std::size_t interim_responses() const;
  // The final response (names lower-cased, trailers after the header fields).
  [[nodiscard]] http_response take_response();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

struct response_read {
  std::optional<http_response> response;  // set when a final response was read
  boost::system::error_code error;
  bool keep_alive = false;
  std::size_t interim_responses = 0;
};

// Feeds `bytes` through an http_response_reader at most `max_read` bytes per
// read, then ends the stream. Pure; for tests and fuzzing.
[[nodiscard]] response_read read_http_response(std::string_view bytes, const response_limits& limits,
                                               bool head_request = false, std::size_t max_read = 64 * 1024);

}  // namespace outbox::providers

template <>
struct boost::system::is_error_code_enum<outbox::providers::response_error> : std::true_type {};

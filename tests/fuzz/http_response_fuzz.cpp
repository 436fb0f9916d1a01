// Fuzzes the HTTPS client's response reader: the same parser set-up, caps,
// chunk-extension check and 1xx skipping the client uses on the socket
// (providers/http/http_response_reader.hpp). Seeds: tests/fuzz/seeds/http_response/.
//
// Each input is read three times, in one large read, byte by byte, and in
// reads of a few bytes; all must agree: parsing must not depend on how TCP
// split the bytes. Build with assertions on (no NDEBUG) to catch Beast's too.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "providers/http/http_response_reader.hpp"

namespace {

using outbox::providers::read_http_response;
using outbox::providers::response_limits;
using outbox::providers::response_read;

// Small caps so the fuzzer reaches them with short inputs.
[[nodiscard]] response_limits fuzz_limits() {
  response_limits limits;
  limits.max_body_bytes = 4096;
  limits.max_header_bytes = 2048;
  limits.max_fields = 16;
  limits.max_chunk_extension = 32;
  limits.max_interim = 3;
  return limits;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void check_invariants(const response_read& r, const response_limits& limits) {
  check(r.response.has_value() == !r.error);
  check(r.interim_responses <= limits.max_interim);
  if (!r.response) return;
  check(r.response->status < 100 || r.response->status > 199);  // interim responses are never final
  check(r.response->body.size() <= limits.max_body_bytes);
  check(r.response->headers.size() <= limits.max_fields);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const response_limits limits = fuzz_limits();
  const bool head_request = size > 0 && data[size - 1] == 'H';  // some inputs read as answers to HEAD
  const std::size_t few = size > 0 ? 2 + data[0] % 11 : 2;

  const response_read whole = read_http_response(bytes, limits, head_request, 64 * 1024);
  check_invariants(whole, limits);
  for (const std::size_t max_read : {std::size_t{1}, few}) {
    const response_read pieces = read_http_response(bytes, limits, head_request, max_read);
    check_invariants(pieces, limits);
    check(whole.response.has_value() == pieces.response.has_value());
    if (!whole.response || !pieces.response) continue;
    check(whole.response->status == pieces.response->status);
    check(whole.response->headers == pieces.response->headers);
    check(whole.response->body == pieces.response->body);
    check(whole.keep_alive == pieces.keep_alive);
    check(whole.interim_responses == pieces.interim_responses);
  }
  return 0;
}

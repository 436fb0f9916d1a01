#pragma once
// Turns an http_request into a target and the request's bytes for the HTTPS
// client, refusing anything that cannot be sent safely. Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "providers/http/http_types.hpp"

namespace outbox::providers::detail {

struct target_url {
  bool tls = true;
  std::string host;  // lower-cased, IPv6 without brackets
  bool host_is_ip = false;
  std::uint16_t port = 443;
  std::string target;       // path and query, starts with '/'
  std::string host_header;  // host[:port], the form used in messages too
  std::string origin;       // pool key
};

struct parsed_url {
  std::optional<target_url> url;
  std::string error;  // never repeats the URL: query strings may carry access tokens
};

// https:// or http:// URLs only; no credentials; the fragment is dropped.
[[nodiscard]] parsed_url parse_url(std::string_view url);

// A request as it goes on the wire: start line, fields, blank line, body,
// built once and written as often as the client needs (a resend on a fresh
// connection reuses it). A small body joins the fields in one buffer (one TLS
// record, one send); a large one (a batch of a thousand events, hundreds of
// kB) keeps its own buffer, moved from the request: copying it cost a fresh
// allocation whose every page faulted in, about a fifth of a batched
// request's CPU (perf, issue 13).
struct wire_request {
  std::string bytes;       // start line and fields, and the body when small
  std::string large_body;  // empty unless the body is large; written after `bytes`
  bool head = false;       // a HEAD request: its response has no body
};

// Bodies above this size are not copied behind the fields (one TLS record holds 16 kB).
inline constexpr std::size_t wire_body_copy_limit = 16 * 1024;

// Writes `req` for `url` into `out` the way Beast's serializer writes a
// request<string_body> after prepare_payload() (tests/providers compare the
// two byte for byte), without Beast's field list: that cost about ten
// allocations and two copies of the body per request. Returns an error text
// when the request cannot be sent as given. Host, Content-Length and
// Transfer-Encoding are ours to set; User-Agent and Content-Type
// (application/json, with a body) are set unless given; header values lose
// their leading and trailing spaces and tabs, as Beast's fields do. A body
// larger than wire_body_copy_limit is moved from `req` into out.large_body.
[[nodiscard]] std::optional<std::string> build_wire(http_request& req, const target_url& url, wire_request& out);

[[nodiscard]] std::string lowered(std::string_view s);

}  // namespace outbox::providers::detail

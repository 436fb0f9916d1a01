#pragma once
// Turns an http_request into a target and a wire message for the HTTPS
// client, refusing anything that cannot be sent safely. Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "providers/http_types.hpp"

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

using request_message = boost::beast::http::request<boost::beast::http::string_body>;

// Fills `msg`; returns an error text when the request cannot be sent as given.
// Host, Content-Length and Transfer-Encoding are ours to set; User-Agent and
// Content-Type (application/json, with a body) are set unless given.
[[nodiscard]] std::optional<std::string> build_message(const http_request& req, const target_url& url,
                                                       request_message& msg);

// The request's bytes on the wire, as Beast's serializer writes them (start
// line, fields in order, blank line, body): one buffer, so a request is one
// TLS write and one send, without the serializer's buffer iterators.
[[nodiscard]] std::string wire_bytes(const request_message& msg);

[[nodiscard]] std::string lowered(std::string_view s);
[[nodiscard]] bool iequals(std::string_view a, std::string_view b);

}  // namespace outbox::providers::detail

#pragma once
// Plain values exchanged between providers (which build requests and judge
// responses) and the HTTPS client (which moves bytes). No I/O here.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "providers/text.hpp"

namespace outbox::providers {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_request {
  std::string method = "POST";
  std::string url;  // absolute: https://host[:port]/path[?query]
  header_list headers;
  std::string body;
};

struct http_response {
  int status = 0;
  header_list headers;  // names lower-cased
  std::string body;

  // First header with this (case-insensitive) name.
  [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
};

// Why no usable response arrived. Every kind except `none` is a transport failure.
enum class transport_error {
  none,
  bad_url,             // the request itself is unusable (a configuration problem)
  resolve,             // DNS lookup failed
  connect,             // TCP connect failed or was refused
  tls_handshake,       // handshake failed, including certificate or host name verification
  timeout,             // a connect, handshake, write or read deadline passed
  connection_reset,    // peer closed or reset the connection before a full response
  response_too_large,  // body or header exceeded the configured cap
  bad_response,        // bytes arrived that are not valid HTTP
};

[[nodiscard]] std::string_view to_string(transport_error e);

struct http_result {
  std::optional<http_response> response;  // set when a complete response was read
  transport_error error = transport_error::none;
  std::string error_message;  // human-readable; never contains secrets or bodies
  std::chrono::milliseconds duration{0};
  // True when request bytes may have reached the server (so it may have acted on them).
  bool maybe_delivered = false;
  // True when the whole request went out on a reused keep-alive connection
  // that then died before any response byte, and was sent again on a fresh
  // one: the server may have received it twice (it must dedup on the key).
  bool resent_on_fresh_connection = false;
  // With resent_on_fresh_connection: how long the first try took, from the
  // start to the connection's end (the attempts log records it on its own).
  std::chrono::milliseconds first_try_duration{0};

  [[nodiscard]] bool ok() const { return response.has_value(); }
};

}  // namespace outbox::providers

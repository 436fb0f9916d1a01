#include "providers/http/http_types.hpp"

#include <algorithm>

namespace outbox::providers {

std::optional<std::string> http_response::header(std::string_view name) const {
  // Names are stored lower-cased, but compare case-insensitively anyway so a
  // hand-built response in a test behaves the same.
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return std::nullopt;
}

std::string_view to_string(transport_error e) {
  switch (e) {
    case transport_error::none: return "none";
    case transport_error::bad_url: return "bad_url";
    case transport_error::resolve: return "resolve";
    case transport_error::connect: return "connect";
    case transport_error::tls_handshake: return "tls_handshake";
    case transport_error::timeout: return "timeout";
    case transport_error::connection_reset: return "connection_reset";
    case transport_error::response_too_large: return "response_too_large";
    case transport_error::bad_response: return "bad_response";
  }
  return "unknown";
}

}  // namespace outbox::providers

#pragma once
// What the engine needs of HTTP: send one request, get what happened back as
// an http_result (never a throw for I/O). https_client is the real one; engine
// tests in virtual time answer from a script instead (tests/support).
#include <boost/asio/awaitable.hpp>

#include "providers/http/http_types.hpp"

namespace outbox::providers {

class http_transport {
 public:
  virtual ~http_transport() = default;
  [[nodiscard]] virtual boost::asio::awaitable<http_result> async_send(http_request req) = 0;
  // Closes every idle kept-alive connection (at shutdown).
  virtual void close_idle() {}
};

}  // namespace outbox::providers

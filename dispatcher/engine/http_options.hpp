#pragma once
// The HTTPS client settings every part of the engine that talks to providers uses.
#include "dispatcher/config/config.hpp"
#include "providers/http/https_client.hpp"

namespace outbox {

[[nodiscard]] inline providers::https_client_options http_options(const config& cfg) {
  providers::https_client_options o;
  o.connect_timeout = cfg.connect_timeout;
  o.handshake_timeout = cfg.connect_timeout;
  o.request_timeout = cfg.request_timeout;
  o.extra_ca_file = cfg.extra_ca_file;
  return o;
}

}  // namespace outbox

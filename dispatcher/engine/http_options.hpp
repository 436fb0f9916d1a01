#pragma once
// The HTTPS client settings every part of the engine that talks to providers uses.
#include <algorithm>
#include <cstddef>

#include "dispatcher/config/config.hpp"
#include "providers/http/https_client.hpp"

namespace outbox {

[[nodiscard]] inline providers::https_client_options http_options(const config& cfg) {
  providers::https_client_options o;
  o.connect_timeout = cfg.connect_timeout;
  o.handshake_timeout = cfg.connect_timeout;
  o.request_timeout = cfg.request_timeout;
  o.extra_ca_file = cfg.extra_ca_file;
  // Destinations on one host (a thousand pixels on graph.facebook.com) share its
  // pool: with fewer idle places than requests in flight, each wave of requests
  // closed connections the next wave opened again, a TLS handshake each
  // (bench/many_destinations.cpp: 55 % of the dispatcher's CPU in libcrypto).
  o.max_idle_per_origin = std::max<std::size_t>(o.max_idle_per_origin, static_cast<std::size_t>(cfg.max_in_flight));
  return o;
}

}  // namespace outbox

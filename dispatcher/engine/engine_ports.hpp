#pragma once
// What the engine talks to besides its configuration: the delivery store, the
// clock and the HTTP transport. Each is optional: a dispatcher process leaves
// them unset and gets PostgreSQL at OUTBOX_DATABASE_URL, the machine's clock and
// an HTTPS client; engine tests pass an in-memory store, a manual clock and a
// scripted transport (tests/support/engine_rig.hpp).
#include "db/store_port.hpp"
#include "dispatcher/engine/clock.hpp"
#include "providers/http/http_transport.hpp"

namespace outbox {

struct engine_ports {
  db::delivery_store* store = nullptr;        // PostgreSQL (db::pg_store) when unset
  outbox::engine_clock* clock = nullptr;      // real_clock() when unset
  providers::http_transport* http = nullptr;  // an https_client from the configuration when unset
};

}  // namespace outbox

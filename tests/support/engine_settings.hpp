#pragma once
// The settings every engine test starts from, in virtual time (engine_rig.hpp)
// or against PostgreSQL (engine_harness.hpp): fast timers, debug logs.
#include "dispatcher/config/config.hpp"

namespace outbox::test {

inline void fast_engine_settings(environment& env) {
  env["OUTBOX_POLL_INTERVAL_MS"] = "500";
  // The shortest lease the rule allows with OAuth destinations (google_pgtest):
  // 3 x (1 s connect + 1 s handshake + 2 s request) + 5 s = 17 s (dispatcher/engine/lease_budget.hpp).
  env["OUTBOX_LEASE_SECONDS"] = "17";
  env["OUTBOX_REQUEST_TIMEOUT_MS"] = "2000";
  env["OUTBOX_CONNECT_TIMEOUT_MS"] = "1000";
  env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "1";
  env["OUTBOX_SHUTDOWN_GRACE_SECONDS"] = "5";
  env["OUTBOX_BACKOFF_BASE_SECONDS"] = "1";
  env["OUTBOX_METRICS_ADDRESS"] = "";
  env["OUTBOX_LOG_LEVEL"] = "debug";
}

}  // namespace outbox::test

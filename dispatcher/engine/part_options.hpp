#pragma once
// What each part of the engine reads of the configuration, taken from it once
// when the engine is made (river's named defaults, merged and validated once):
// a part sees its own options, never the whole `config`.
#include <chrono>

#include "dispatcher/engine/adaptive_wake.hpp"
#include "dispatcher/engine/backoff.hpp"
#include "providers/http/https_client.hpp"

namespace outbox {

struct config;

struct claimer_options {
  int max_in_flight = 1000;
  int claim_batch = 100;
  std::chrono::milliseconds poll_interval{2000};
  std::chrono::seconds lease{30};
  int max_attempts = 12;  // expired leases at or past this wait for the sweeper
  bool listens = true;    // OUTBOX_WAKE_MODE=listen: the adaptive wake mode applies
  adaptive_wake_options adaptive;
};

struct sender_options {
  std::size_t max_payload_bytes = 0;
  backoff_policy backoff;
  std::chrono::seconds unknown_destination_grace{600};
};

struct settler_options {
  std::chrono::milliseconds settle_window{2};
};

struct maintenance_options {
  std::chrono::seconds lease{30};
  std::chrono::seconds sweep_interval{15};
  int max_attempts = 12;
  bool listens = true;                                  // the wake mode is read only when the engine listens
  std::chrono::seconds keep_personal_data_sent{86400};  // 0: kept
  std::chrono::seconds keep_personal_data_dead{7 * 86400};
};

struct reconciler_options {
  std::chrono::seconds status_poll_interval{60};
  providers::https_client_options http;
};

[[nodiscard]] claimer_options claimer_options_from(const config& cfg);
[[nodiscard]] sender_options sender_options_from(const config& cfg);
[[nodiscard]] settler_options settler_options_from(const config& cfg);
[[nodiscard]] maintenance_options maintenance_options_from(const config& cfg);
[[nodiscard]] reconciler_options reconciler_options_from(const config& cfg);

}  // namespace outbox

#include "dispatcher/engine/part_options.hpp"

#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/http_options.hpp"

namespace outbox {

claimer_options claimer_options_from(const config& cfg) {
  claimer_options o;
  o.max_in_flight = cfg.max_in_flight;
  o.claim_batch = cfg.claim_batch;
  o.poll_interval = cfg.poll_interval;
  o.lease = cfg.lease;
  o.max_attempts = cfg.backoff.max_attempts;
  o.listens = cfg.wake == wake_mode::listen;
  o.adaptive.linger = cfg.adaptive_linger;
  o.adaptive.awake_poll = cfg.adaptive_poll;
  o.adaptive.ttl = cfg.adaptive_ttl;
  o.adaptive.wake_rate = cfg.adaptive_wake_rate;
  return o;
}

sender_options sender_options_from(const config& cfg) {
  return {cfg.max_payload_bytes, cfg.backoff, cfg.unknown_destination_grace};
}

settler_options settler_options_from(const config& cfg) { return {cfg.settle_window}; }

maintenance_options maintenance_options_from(const config& cfg) {
  return {cfg.lease,
          cfg.sweep_interval,
          cfg.backoff.max_attempts,
          cfg.wake == wake_mode::listen,
          cfg.keep_personal_data_sent,
          cfg.keep_personal_data_dead};
}

reconciler_options reconciler_options_from(const config& cfg) { return {cfg.status_poll_interval, http_options(cfg)}; }

}  // namespace outbox

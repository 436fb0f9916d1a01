#pragma once
// What the benchmark's rows look like and where the dispatcher sends them, per
// provider (options::provider):
//  - webhook: a realistic conversion event (about 330 bytes, hashed user data),
//    POSTed one per request to the sink, HMAC-signed unless --no-sign;
//  - meta: a canonical CRM lead (raw e-mail, phone and names, which the Meta
//    provider normalizes and hashes; value, currency, order id, lead id,
//    event_time = the insert's now()), sent in batches of --meta-batch events
//    to the sink speaking Meta's Conversions API.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/event_sink.hpp"
#include "bench/lean_sink.hpp"
#include "bench/support.hpp"

namespace outbox::bench {

struct workload {
  std::string provider;  // the rows' provider column
  // Multi-row insert, one transaction: $1 first lead id, $2 last lead id, $3 `payload`.
  std::string insert_sql;
  std::string payload;  // the template every row starts from
};

[[nodiscard]] workload workload_for(const options& o);
[[nodiscard]] lean_sink::protocol sink_protocol(const options& o);

// The dispatcher's destination settings (OUTBOX_DEST__...) pointing at `sink`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> destination_env(const options& o,
                                                                               const event_sink& sink);
// The webhook destination's signing secret ("" with --no-sign).
[[nodiscard]] std::string webhook_secret_for(const options& o);

// One webhook row's payload for lead `lead` (the latency scenario's producers).
[[nodiscard]] std::string webhook_payload(std::int64_t lead);

}  // namespace outbox::bench

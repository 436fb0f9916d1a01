#include "bench/workload.hpp"

#include <stdexcept>

namespace outbox::bench {
namespace {

// A signing secret in the Standard Webhooks format, so every request carries an
// HMAC-SHA256 signature as it would in production.
constexpr const char* webhook_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// A realistic conversion event (about 330 bytes as JSON): hashed user data,
// custom data, event time. The lead id is patched in per row.
constexpr const char* webhook_template =
    R"({"action_source": "system_generated", "custom_data": {"currency": "EUR", "lead_event_source": "crm", "value": 129.5}, "event_name": "Lead", "event_time": 1760000000, "lead_project_id": 0, "user_data": {"em": "7b17fb0bd173f625b58636fb796407c22b3d16fc78302d79f0fd30c2fc2fc068", "ph": "254aa248acb47dd654ca3ea53f48c2c26d641d23d7e2e93a1ec56258df7674c4"}})";

// A CRM lead in the canonical form (docs/providers.md); the insert adds
// event_time, email, lead_id and order_id per row.
constexpr const char* meta_template =
    R"({"action_source": "system_generated", "phone": "(650) 555-1212", "first_name": "Mary", "last_name": "Smith", "country": "US", "value": 120.5, "currency": "EUR"})";

constexpr const char* meta_pixel = "1234567890";

}  // namespace

workload workload_for(const options& o) {
  if (o.provider == "webhook") {
    return {"webhook",
            "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload) "
            "SELECT g, 'webhook', 'Lead', outbox_idempotency_key(g, 'webhook', 'Lead'), "
            "       jsonb_set($3::jsonb, '{lead_project_id}', to_jsonb(g)) "
            "FROM generate_series($1::bigint, $2::bigint) AS g",
            webhook_payload(0)};
  }
  if (o.provider == "meta") {
    return {"meta",
            "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload) "
            "SELECT g, 'meta', 'Lead', outbox_idempotency_key(g, 'meta', 'Lead'), "
            "       $3::jsonb || jsonb_build_object('event_time', extract(epoch FROM now())::bigint, "
            "                                       'email', ' Lead' || g || '@Example.com ', "
            "                                       'lead_id', g::text, 'order_id', 'A-' || g) "
            "FROM generate_series($1::bigint, $2::bigint) AS g",
            meta_template};
  }
  throw std::invalid_argument("unknown --provider " + o.provider + " (webhook or meta)");
}

lean_sink::protocol sink_protocol(const options& o) {
  return o.provider == "meta" ? lean_sink::protocol::meta : lean_sink::protocol::webhook;
}

std::vector<std::pair<std::string, std::string>> destination_env(const options& o, const event_sink& sink) {
  const std::string prefix = o.provider == "meta" ? "OUTBOX_DEST__META__DEFAULT__" : "OUTBOX_DEST__WEBHOOK__DEFAULT__";
  std::vector<std::pair<std::string, std::string>> env;
  if (o.provider == "meta") {
    env.emplace_back(prefix + "PIXEL_ID", meta_pixel);
    env.emplace_back(prefix + "ACCESS_TOKEN", "bench-access-token");
    env.emplace_back(prefix + "BASE_URL", sink.url(""));
    env.emplace_back(prefix + "BATCH_SIZE", std::to_string(o.meta_batch));
  } else {
    env.emplace_back(prefix + "URL", sink.url("/hook"));
    if (o.sign) env.emplace_back(prefix + "SECRET", webhook_secret);
  }
  if (o.concurrency) env.emplace_back(prefix + "CONCURRENCY", std::to_string(*o.concurrency));
  return env;
}

std::string webhook_secret_for(const options& o) { return o.sign ? webhook_secret : ""; }

std::string webhook_payload(std::int64_t lead) {
  std::string p = webhook_template;
  const std::string needle = "\"lead_project_id\": 0";
  p.replace(p.find(needle), needle.size(), "\"lead_project_id\": " + std::to_string(lead));
  return p;
}

}  // namespace outbox::bench

#include "tests/support/fake_tiktok.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <string_view>

#include "tests/support/sha256_hex.hpp"

namespace outbox::test {
namespace {

using nlohmann::json;

constexpr std::string_view track_path = "/open_api/v1.3/event/track/";

// One SHA-256 hex, or a non-empty list of them (TikTok takes both for email, phone, external_id).
bool is_hash(const json& v) {
  if (v.is_array())
    return !v.empty() && std::all_of(v.begin(), v.end(), [](const json& item) { return is_sha256_hex(item); });
  return is_sha256_hex(v);
}

response_plan tiktok_reply(long long code, const std::string& message) {
  return response_plan::reply(200,
                              json{{"code", code},
                                   {"message", message},
                                   {"request_id", "fake-" + std::to_string(code)},
                                   {"data", json::object()}}
                                  .dump(),
                              {{"content-type", "application/json"}});
}

}  // namespace

struct fake_tiktok::state {
  fake_tiktok_options options;
  mutable std::mutex mutex;
  std::vector<json> accepted;
  std::vector<fake_tiktok_request> requests;

  response_plan answer(const recorded_request& req) {
    fake_tiktok_request seen;
    long long code = 0;
    auto plan = decide(req, seen, code);
    seen.code = code;
    const std::lock_guard lock{mutex};
    requests.push_back(std::move(seen));
    return plan;
  }

  response_plan fail(long long& code, long long value, const std::string& message) {
    code = value;
    return tiktok_reply(value, message);
  }

  response_plan decide(const recorded_request& req, fake_tiktok_request& seen, long long& code) {
    fake_tiktok_options o;
    {
      const std::lock_guard lock{mutex};
      o = options;
    }
    if (req.method != "POST" || req.target != track_path) {
      code = -1;
      return response_plan::reply(404, "404 page not found", {{"content-type", "text/plain"}});
    }
    const auto token = req.header("access-token");
    if (!token || token->empty()) return fail(code, 40104, "Access token is null, please check your access token.");
    if (*token != o.access_token) return fail(code, 40105, "Access token is incorrect or has been revoked.");
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return fail(code, 40002, "Invalid JSON in the request body.");
    if (body.contains("event_source") && body["event_source"].is_string()) {
      seen.event_source = body["event_source"].get<std::string>();
    }
    if (body.contains("test_event_code") && body["test_event_code"].is_string()) {
      seen.test_event_code = body["test_event_code"].get<std::string>();
    }
    static constexpr std::array<std::string_view, 4> sources{"web", "app", "offline", "crm"};
    if (std::find(sources.begin(), sources.end(), seen.event_source) == sources.end()) {
      return fail(code, 40002, "event_source: value must be one of web, app, offline, crm.");
    }
    if (!body.contains("event_source_id") || body["event_source_id"] != o.event_source_id) {
      return fail(code, 40002, "event_source_id: the event source does not exist or you have no access to it.");
    }
    if (!body.contains("data") || !body["data"].is_array() || body["data"].empty() || body["data"].size() > 1000) {
      return fail(code, 40002, "data: must be an array of 1 to 1000 events.");
    }
    const json& data = body["data"];
    for (const auto& e : data) {
      if (e.is_object() && e.contains("event_id") && e["event_id"].is_string()) {
        seen.event_ids.push_back(e["event_id"].get<std::string>());
      }
    }
    for (std::size_t i = 0; i < data.size(); ++i) {
      const json& e = data[i];
      const std::string at = "data[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("event") || !e["event"].is_string()) {
        return fail(code, 40002, at + ".event: field is required.");
      }
      if (!e.contains("event_time") || !e["event_time"].is_number_integer()) {
        return fail(code, 40002, at + ".event_time: field is required and must be unix seconds.");
      }
      if (!e.contains("event_id") || !e["event_id"].is_string()) {
        return fail(code, 40002, at + ".event_id: field is required.");
      }
      if (e.contains("user") && e["user"].is_object()) {
        for (const char* key : {"email", "phone", "external_id"}) {
          if (e["user"].contains(key) && !is_hash(e["user"][key])) {
            return fail(code, 40062, at + ".user." + key + ": PII fields must be SHA-256 hashed.");
          }
        }
      }
      if (e.contains("properties") && e["properties"].is_object() && e["properties"].contains("order_id") &&
          e["properties"]["order_id"] == o.poison_order_id) {
        return fail(code, 40002, "Invalid parameter: " + at + ".properties.order_id '" + o.poison_order_id + "'.");
      }
    }
    {
      const std::lock_guard lock{mutex};
      for (const auto& e : data) accepted.push_back(e);
    }
    code = 0;
    return tiktok_reply(0, "OK");
  }
};

fake_tiktok::fake_tiktok(fake_tiktok_options options) : state_(std::make_shared<state>()) {
  state_->options = std::move(options);
}

responder fake_tiktok::make_responder() const {
  return [s = state_](const recorded_request& req) { return s->answer(req); };
}

void fake_tiktok::install(test_https_server& server) const { server.set_fallback(make_responder()); }

void fake_tiktok::set_access_token(std::string token) {
  const std::lock_guard lock{state_->mutex};
  state_->options.access_token = std::move(token);
}

std::vector<nlohmann::json> fake_tiktok::accepted_events() const {
  const std::lock_guard lock{state_->mutex};
  return state_->accepted;
}

std::vector<std::string> fake_tiktok::accepted_event_ids() const {
  std::vector<std::string> ids;
  for (const auto& e : accepted_events()) ids.push_back(e.value("event_id", std::string{}));
  return ids;
}

std::size_t fake_tiktok::times_accepted(const std::string& event_id) const {
  const auto ids = accepted_event_ids();
  return static_cast<std::size_t>(std::count(ids.begin(), ids.end(), event_id));
}

std::vector<fake_tiktok_request> fake_tiktok::requests() const {
  const std::lock_guard lock{state_->mutex};
  return state_->requests;
}

}  // namespace outbox::test

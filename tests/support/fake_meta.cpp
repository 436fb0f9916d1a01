#include "tests/support/fake_meta.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "providers/crypto.hpp"
#include "tests/support/sha256_hex.hpp"

namespace outbox::test {
namespace {

using nlohmann::json;

// Meta's hashed user_data fields: a string or an array of strings, each a lower-case SHA-256.
bool hashed_field_ok(const json& v) {
  if (v.is_array())
    return !v.empty() && std::all_of(v.begin(), v.end(), [](const json& item) { return is_sha256_hex(item); });
  return is_sha256_hex(v);
}

response_plan graph_error(int status, int code, std::string message, std::optional<int> subcode = std::nullopt,
                          std::string type = "OAuthException", std::string user_title = {}, std::string user_msg = {}) {
  json error{{"message", std::move(message)},
             {"type", std::move(type)},
             {"code", code},
             {"is_transient", false},
             {"fbtrace_id", "FakeTrace" + std::to_string(code)}};
  if (subcode) error["error_subcode"] = *subcode;
  if (!user_title.empty()) error["error_user_title"] = std::move(user_title);
  if (!user_msg.empty()) error["error_user_msg"] = std::move(user_msg);
  return response_plan::reply(status, json{{"error", error}}.dump(), {{"content-type", "application/json"}});
}

// Why Meta would refuse this event, or "" when it is fine.
std::string event_problem(const json& e, const std::string& poison) {
  if (!e.is_object()) return "each event must be an object";
  for (const char* key : {"event_name", "action_source", "event_id"}) {
    if (!e.contains(key) || !e[key].is_string() || e[key].get_ref<const std::string&>().empty()) {
      return std::string{"The parameter "} + key + " is required";
    }
  }
  if (!e.contains("event_time") || !e["event_time"].is_number_integer()) {
    return "The parameter event_time is required and must be a unix timestamp in seconds";
  }
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const bool store = e["action_source"] == "physical_store";
  if (now - e["event_time"].get<std::int64_t>() > (store ? 62 : 7) * 86400) {
    return "The timestamp for this event is too far in the past";
  }
  if (!e.contains("user_data") || !e["user_data"].is_object() || e["user_data"].empty()) {
    return "The parameter user_data is required and must carry at least one customer information parameter";
  }
  for (const char* key : {"em", "ph", "fn", "ln", "ct", "st", "zp", "country", "db"}) {
    if (e["user_data"].contains(key) && !hashed_field_ok(e["user_data"][key])) {
      return std::string{"user_data."} + key + " must be hashed with SHA-256";
    }
  }
  if (e["action_source"] == "website" &&
      (!e.contains("event_source_url") || !e["user_data"].contains("client_user_agent"))) {
    return "Website events require event_source_url and client_user_agent";
  }
  if (e.contains("custom_data") && e["custom_data"].is_object() && e["custom_data"].contains("order_id") &&
      e["custom_data"]["order_id"] == poison) {
    return "custom_data.order_id '" + poison + "' was rejected";
  }
  return {};
}

}  // namespace

struct fake_meta::state {
  fake_meta_options options;
  mutable std::mutex mutex;
  std::vector<json> accepted;
  std::vector<fake_meta_request> requests;

  response_plan answer(const recorded_request& req) {
    fake_meta_request seen;
    auto plan = decide(req, seen);
    seen.status = plan.status;
    const std::lock_guard lock{mutex};
    requests.push_back(std::move(seen));
    return plan;
  }

  // `name` from the query string (percent-decoded), else from the JSON body.
  static std::string graph_param(const std::string& target, const json& body, const std::string& name) {
    const std::size_t q = target.find('?');
    if (q != std::string::npos) {
      const std::string query = "&" + target.substr(q + 1);
      if (const std::size_t at = query.find("&" + name + "="); at != std::string::npos) {
        const std::size_t start = at + name.size() + 2;
        const std::string raw = query.substr(start, query.find('&', start) - start);
        std::string out;
        for (std::size_t i = 0; i < raw.size(); ++i) {
          if (raw[i] == '%' && i + 2 < raw.size()) {
            out.push_back(static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16)));
            i += 2;
          } else {
            out.push_back(raw[i] == '+' ? ' ' : raw[i]);
          }
        }
        return out;
      }
    }
    return body.contains(name) && body[name].is_string() ? body[name].get<std::string>() : std::string{};
  }

  response_plan decide(const recorded_request& req, fake_meta_request& seen) {
    const std::string target = req.target;
    const std::size_t q = target.find('?');
    const std::string path = target.substr(0, q);
    if (q != std::string::npos && target.find("access_token=", q) != std::string::npos) seen.token_in_url = true;

    fake_meta_options o;
    {
      const std::lock_guard lock{mutex};
      o = options;
    }
    if (req.method != "POST") {
      return graph_error(400, 100, "Unsupported " + req.method + " request.", 33, "GraphMethodException");
    }
    const std::string prefix = "/" + o.api_version + "/";
    if (!path.starts_with(prefix) || !path.ends_with("/events")) {
      return graph_error(400, 2500, "Unknown path components: " + path, std::nullopt, "OAuthException");
    }
    const std::string pixel = path.substr(prefix.size(), path.size() - prefix.size() - 7);
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      seen.error_code = 100;
      return graph_error(400, 100, "(#100) The request body is not valid JSON", std::nullopt, "GraphMethodException");
    }
    if (body.contains("test_event_code") && body["test_event_code"].is_string()) {
      seen.test_event_code = body["test_event_code"].get<std::string>();
    }
    // Graph reads a parameter from the query string or the body, as its reference allows.
    const auto token = graph_param(target, body, "access_token");
    if (token.empty()) {
      seen.error_code = 104;
      return graph_error(400, 104, "An access token is required to request this resource.");
    }
    if (token != o.access_token) {
      seen.error_code = 190;
      return graph_error(400, 190, "Invalid OAuth access token - Cannot parse access token");
    }
    if (!o.app_secret.empty()) {
      const auto expected = providers::hex_encode(providers::hmac_sha256(o.app_secret, token));
      const auto proof = graph_param(target, body, "appsecret_proof");
      if (proof.empty()) {
        seen.error_code = 100;
        return graph_error(400, 100, "API calls from the server require an appsecret_proof argument", std::nullopt,
                           "GraphMethodException");
      }
      if (proof != expected) {
        seen.error_code = 100;
        return graph_error(400, 100, "Invalid appsecret_proof provided in the API argument", std::nullopt,
                           "GraphMethodException");
      }
    }
    if (pixel != o.pixel_id) {
      seen.error_code = 100;
      return graph_error(400, 100,
                         "Unsupported post request. Object with ID '" + pixel +
                             "' does not exist, cannot be loaded due to missing permissions, or does not support "
                             "this operation.",
                         33, "GraphMethodException");
    }
    if (!body.contains("data") || !body["data"].is_array() || body["data"].empty() || body["data"].size() > 1000) {
      seen.error_code = 100;
      return graph_error(400, 100, "(#100) param data must be an array of 1 to 1000 events", std::nullopt,
                         "OAuthException");
    }
    const json& data = body["data"];
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (data[i].is_object() && data[i].contains("event_id") && data[i]["event_id"].is_string()) {
        seen.event_ids.push_back(data[i]["event_id"].get<std::string>());
      }
    }
    // All or nothing: the first invalid event refuses the whole request.
    for (std::size_t i = 0; i < data.size(); ++i) {
      const std::string problem = event_problem(data[i], o.poison_order_id);
      if (!problem.empty()) {
        seen.error_code = 100;
        return graph_error(400, 100, "Invalid parameter", 2804019, "OAuthException", "Invalid event",
                           "Event at index " + std::to_string(i) + ": " + problem);
      }
    }
    {
      const std::lock_guard lock{mutex};
      for (const auto& e : data) accepted.push_back(e);
    }
    return response_plan::reply(
        200, json{{"events_received", data.size()}, {"messages", json::array()}, {"fbtrace_id", "FakeTraceOK"}}.dump(),
        {{"content-type", "application/json"}});
  }
};

fake_meta::fake_meta(fake_meta_options options) : state_(std::make_shared<state>()) {
  state_->options = std::move(options);
}

responder fake_meta::make_responder() const {
  return [s = state_](const recorded_request& req) { return s->answer(req); };
}

void fake_meta::install(test_https_server& server) const { server.set_fallback(make_responder()); }

std::string fake_meta::events_path() const {
  const std::lock_guard lock{state_->mutex};
  return "/" + state_->options.api_version + "/" + state_->options.pixel_id + "/events";
}

void fake_meta::set_access_token(std::string token) {
  const std::lock_guard lock{state_->mutex};
  state_->options.access_token = std::move(token);
}

std::vector<nlohmann::json> fake_meta::accepted_events() const {
  const std::lock_guard lock{state_->mutex};
  return state_->accepted;
}

std::vector<std::string> fake_meta::accepted_event_ids() const {
  std::vector<std::string> ids;
  for (const auto& e : accepted_events()) ids.push_back(e.value("event_id", std::string{}));
  return ids;
}

std::size_t fake_meta::times_accepted(const std::string& event_id) const {
  const auto ids = accepted_event_ids();
  return static_cast<std::size_t>(std::count(ids.begin(), ids.end(), event_id));
}

std::vector<fake_meta_request> fake_meta::requests() const {
  const std::lock_guard lock{state_->mutex};
  return state_->requests;
}

}  // namespace outbox::test

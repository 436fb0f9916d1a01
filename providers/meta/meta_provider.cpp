#include "providers/meta/meta_provider.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "providers/crypto.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/http/query_escape.hpp"
#include "providers/json_text_writer.hpp"
#include "providers/setting_checks.hpp"

namespace outbox::providers {
namespace {

using nlohmann::json;
using settings_map = std::map<std::string, std::string>;
using namespace setting_checks;

bool valid_api_version(std::string_view v) {
  if (v.size() < 4 || v.front() != 'v') return false;
  const std::size_t dot = v.find('.');
  return dot != std::string_view::npos && all_digits(v.substr(1, dot - 1)) && all_digits(v.substr(dot + 1));
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, const char* key) {
  const json* v = member(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string{};
}

std::optional<int> int_member(const json& object, const char* key) {
  const json* v = member(object, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return static_cast<int>(v->get<std::int64_t>());
  if (v->is_string()) {
    int n = 0;
    const std::string& s = v->get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc{} && end == s.data() + s.size()) return n;
  }
  return std::nullopt;
}

bool is_retry_code(int code) {
  // 1 unknown, 2 service, 4 app throttling, 17 user throttling, 32 page throttling,
  // 341 application limit, 368 temporarily blocked, 613 rate limit.
  return code == 1 || code == 2 || code == 4 || code == 17 || code == 32 || code == 341 || code == 368 || code == 613;
}

// 190 invalid or expired token, 102 session, 104 no token at all.
bool is_token_code(int code) { return code == 190 || code == 102 || code == 104; }
bool is_permission_code(int code) { return code == 3 || code == 10 || (code >= 200 && code <= 299); }

}  // namespace

std::vector<std::pair<std::string, std::string>> validate_meta_settings(const settings_map& settings) {
  std::vector<std::pair<std::string, std::string>> problems;
  const std::string_view pixel = setting(settings, "pixel_id");
  if (pixel.empty()) {
    problems.emplace_back("pixel_id", "is required (the Meta pixel or dataset id, digits only)");
  } else if (!all_digits(pixel)) {
    problems.emplace_back("pixel_id", "must contain only digits" + got(pixel));
  }
  const std::string_view token = setting(settings, "access_token");
  if (token.empty()) {
    problems.emplace_back("access_token", "is required (a Conversions API access token from Events Manager)");
  } else if (has_blank_or_control(token)) {
    problems.emplace_back("access_token", "must not contain spaces or control characters");
  }
  if (has_blank_or_control(setting(settings, "app_secret"))) {
    problems.emplace_back("app_secret", "must not contain spaces or control characters");
  }
  if (const auto v = setting(settings, "api_version"); !v.empty() && !valid_api_version(v)) {
    problems.emplace_back("api_version", "must look like v25.0" + got(v));
  }
  if (const auto url = setting(settings, "base_url"); !url.empty()) {
    if (auto problem = base_url_problem(url); !problem.empty()) problems.emplace_back("base_url", problem + got(url));
  }
  if (const auto size = setting(settings, "batch_size"); !size.empty() && !parse_size(size, 1, meta_max_batch_size)) {
    problems.emplace_back("batch_size",
                          "must be a whole number from 1 to " + std::to_string(meta_max_batch_size) + got(size));
  }
  if (const auto code = setting(settings, "test_event_code"); has_control(code)) {
    problems.emplace_back("test_event_code", "must not contain control characters");
  }
  if (const auto source = setting(settings, "lead_event_source"); has_control(source) || source.size() > 100) {
    problems.emplace_back("lead_event_source", "must be at most 100 characters without control characters");
  }
  if (const auto code = setting(settings, "default_phone_country_code"); !code.empty()) {
    if (auto problem = calling_code_problem(code); !problem.empty()) {
      problems.emplace_back("default_phone_country_code", problem + got(code));
    }
  }
  if (const auto mode = setting(settings, "on_expired_lease"); !mode.empty() && mode != "resend" && mode != "hold") {
    problems.emplace_back("on_expired_lease", "must be resend or hold" + got(mode));
  }
  return problems;
}

meta_destination make_meta_destination(const settings_map& settings) {
  meta_destination d;
  d.pixel_id = std::string{setting(settings, "pixel_id")};
  d.access_token = std::string{setting(settings, "access_token")};
  d.app_secret = std::string{setting(settings, "app_secret")};
  if (const auto v = setting(settings, "api_version"); !v.empty()) d.api_version = std::string{v};
  if (const auto v = setting(settings, "base_url"); !v.empty()) d.base_url = strip_trailing_slashes(v);
  d.test_event_code = std::string{setting(settings, "test_event_code")};
  if (const auto v = parse_size(setting(settings, "batch_size"), 1, meta_max_batch_size)) d.batch_size = *v;
  d.default_phone_country_code = calling_code(setting(settings, "default_phone_country_code"));
  d.hold_reclaimed = setting(settings, "on_expired_lease") == "hold";
  if (const auto v = setting(settings, "lead_event_source"); !v.empty()) d.lead_event_source = std::string{v};
  return d;
}

std::string meta_appsecret_proof(std::string_view app_secret, std::string_view access_token) {
  return hex_encode(hmac_sha256(app_secret, access_token));
}

std::string meta_events_url(const meta_destination& destination) {
  return destination.base_url + "/" + destination.api_version + "/" + destination.pixel_id + "/events";
}

std::optional<std::string> meta_event_age_problem(const canonical_event& event,
                                                  std::chrono::system_clock::time_point now) {
  const bool store = event.action_source == "physical_store";
  const std::int64_t limit_days = store ? meta_max_physical_store_age_days : meta_max_event_age_days;
  const std::int64_t now_s = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::int64_t age = now_s - event.event_time;
  if (-age > meta_max_future_seconds) {
    return "event_time is " + std::to_string(-age / 60) +
           " minutes in the future; Meta takes the time a conversion "
           "happened (up to " +
           std::to_string(limit_days) + " days ago), so check the CRM's clock and time zone";
  }
  if (age <= limit_days * 86400) return std::nullopt;
  const std::int64_t days = age / 86400;
  std::string text = "event_time is ";
  text +=
      days > limit_days ? std::to_string(days) + " days old" : "more than " + std::to_string(limit_days) + " days old";
  text += "; Meta rejects events older than " + std::to_string(limit_days) + " days";
  if (store) text += " for action_source physical_store";
  return text;
}

std::optional<meta_error> parse_meta_error(std::string_view body) {
  const json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  const json* error = member(doc, "error");
  if (error == nullptr || !error->is_object()) return std::nullopt;
  meta_error e;
  const auto code = int_member(*error, "code");
  if (!code) return std::nullopt;
  e.code = *code;
  e.subcode = int_member(*error, "error_subcode");
  if (const json* t = member(*error, "is_transient"); t != nullptr && t->is_boolean()) e.is_transient = t->get<bool>();
  e.message = string_member(*error, "message");
  e.type = string_member(*error, "type");
  e.user_title = string_member(*error, "error_user_title");
  e.user_msg = string_member(*error, "error_user_msg");
  e.fbtrace_id = string_member(*error, "fbtrace_id");
  return e;
}

meta_error_action meta_error_action_for(const meta_error& error, int http_status) {
  if (error.is_transient || is_retry_code(error.code)) return meta_error_action::retry;
  if (is_token_code(error.code) || is_permission_code(error.code)) return meta_error_action::pause_destination;
  // "Object with ID ... does not exist, cannot be loaded due to missing permissions":
  // a wrong pixel_id or a token without access to it, true for every event.
  if (error.code == 100 && error.subcode == 33) return meta_error_action::pause_destination;
  // A missing or wrong appsecret_proof is code 100 too; only the message tells it apart.
  if (error.code == 100 && error.message.find("appsecret_proof") != std::string::npos) {
    return meta_error_action::pause_destination;
  }
  if (is_retryable_status(http_status)) return meta_error_action::retry;
  return meta_error_action::reject_batch;
}

std::string meta_error_text(const meta_error& error) {
  std::string text = "Meta error " + std::to_string(error.code);
  if (error.subcode) text += " (subcode " + std::to_string(*error.subcode) + ")";
  text += ": ";
  if (!error.user_msg.empty()) {
    if (!error.user_title.empty()) text += one_line_excerpt(error.user_title, 100) + ": ";
    text += one_line_excerpt(error.user_msg, 300);
  } else if (!error.message.empty()) {
    text += one_line_excerpt(error.message, 300);
  } else {
    text += "no message";
  }
  if (!error.fbtrace_id.empty()) text += " [fbtrace_id " + one_line_excerpt(error.fbtrace_id, 60) + "]";
  return text;
}

meta_provider::meta_provider(meta_destination destination) : destination_(std::move(destination)) {
  if (!destination_.app_secret.empty()) {
    appsecret_proof_ = meta_appsecret_proof(destination_.app_secret, destination_.access_token);
  }
}

namespace {

struct meta_prepared final : prepared_state {
  // One entry of "data", hashed and merged, already serialized: a batch joins
  // these texts instead of copying and dumping a thousand documents again.
  std::string event_text;
};

}  // namespace

preparation meta_provider::prepare(const outbound_event& event, std::chrono::system_clock::time_point now) const {
  preparation out;
  auto parsed = canonical_event_of(event, out);
  if (!parsed) return out;
  auto& c = *parsed;
  if (auto problem = meta_event_age_problem(c, now)) {
    out.error = std::move(problem);
    return out;
  }
  if (c.action_source == "website") {
    if (!c.event_source_url) out.error = "event_source_url: required by Meta when action_source is website";
    else if (!c.user_agent)
      out.error = "user_agent: required by Meta (client_user_agent) when action_source is website";
    if (out.error) return out;
  }
  auto entry = meta_event_entry_for(event, c, destination_, out.dropped, now);
  out.match_keys = std::move(entry.match_keys);
  auto state = std::make_shared<meta_prepared>();
  state->event_text = std::move(entry.text);
  out.state = std::move(state);
  return out;
}

http_request meta_provider::build_request(std::span<const outbound_event> events,
                                          std::chrono::system_clock::time_point now) const {
  // {"data":[...],"test_event_code":...}, compact: the entries' texts joined.
  std::size_t size = 64 + destination_.test_event_code.size();
  for (const auto& event : events) {
    if (const auto* ready = prepared_as<meta_prepared>(event)) size += ready->event_text.size() + 1;
  }
  std::string body;
  body.reserve(size);
  body += R"({"data":[)";
  for_each_prepared<meta_prepared>(*this, events, now, [&](const meta_prepared& p) {
    if (body.back() != '[') body.push_back(',');
    body += p.event_text;
  });
  body.push_back(']');
  if (!destination_.test_event_code.empty()) {
    body += R"(,"test_event_code":)";
    append_json_string(body, destination_.test_event_code);
  }
  body.push_back('}');

  // Where Meta's reference puts the token: POST .../events?access_token=... (the
  // URL never reaches our logs; appsecret_proof travels beside it).
  http_request request;
  request.method = "POST";
  request.url = meta_events_url(destination_) + "?access_token=" + query_escape(destination_.access_token);
  if (!appsecret_proof_.empty()) request.url += "&appsecret_proof=" + appsecret_proof_;
  request.headers.emplace_back("content-type", "application/json");
  request.body = std::move(body);
  return request;
}

batch_outcome meta_provider::classify(std::span<const outbound_event> events, const http_result& result,
                                      std::chrono::system_clock::time_point now) const {
  const std::size_t n = events.size();
  if (!result.response) return uniform_outcome(n, result, now);
  const auto error = parse_meta_error(result.response->body);
  // No envelope: 2xx delivered, 5xx/429 retry, 401/403 pause, other 4xx dead.
  if (!error) return uniform_outcome(n, result, now);

  const int status = result.response->status;
  const std::string text = meta_error_text(*error);
  batch_outcome out;
  event_outcome outcome;
  outcome.error = text;
  switch (meta_error_action_for(*error, status)) {
    case meta_error_action::retry:
      outcome.kind = outcome_kind::retry;
      if (const auto header = result.response->header("retry-after")) {
        outcome.retry_after = parse_retry_after(*header, now);
      }
      break;
    case meta_error_action::pause_destination:
      outcome.kind = outcome_kind::retry;  // the rows are not at fault
      if (is_token_code(error->code)) {
        out.pause_destination = "Meta refused the access token (fix access_token): " + text;
      } else if (error->code == 100 && error->subcode != 33) {
        out.pause_destination = "Meta refused the appsecret_proof (check app_secret): " + text;
      } else if (error->code == 100) {
        out.pause_destination = "Meta cannot reach pixel " + destination_.pixel_id +
                                " with this token (check pixel_id and the token's access): " + text;
      } else {
        out.pause_destination = "Meta denied permission (grant the token access to the pixel): " + text;
      }
      break;
    case meta_error_action::reject_batch:
      if (n > 1) {
        // All-or-nothing: one bad event refused the lot. Resend each alone to find it.
        outcome.kind = outcome_kind::retry;
        outcome.resend_alone = true;
        outcome.error = text + " (batch of " + std::to_string(n) + " refused; resending each event alone)";
      } else {
        outcome.kind = outcome_kind::dead;
      }
      break;
  }
  out.events.assign(n, outcome);
  return out;
}

}  // namespace outbox::providers

#include "providers/tiktok/tiktok_provider.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "providers/http/http_outcome.hpp"
#include "providers/setting_checks.hpp"
#include "providers/user_data/match_keys.hpp"
#include "providers/user_data/user_fields.hpp"

namespace outbox::providers {
namespace {

using nlohmann::json;
using settings_map = std::map<std::string, std::string>;
using namespace setting_checks;

constexpr std::array<std::string_view, 4> event_sources{"web", "app", "offline", "crm"};

}  // namespace

std::vector<std::pair<std::string, std::string>> validate_tiktok_settings(const settings_map& settings) {
  std::vector<std::pair<std::string, std::string>> problems;
  const std::string_view token = setting(settings, "access_token");
  if (token.empty()) {
    problems.emplace_back("access_token", "is required (an Events API access token from TikTok Events Manager)");
  } else if (has_blank_or_control(token)) {
    problems.emplace_back("access_token", "must not contain spaces or control characters");
  }
  if (const auto source = setting(settings, "event_source");
      !source.empty() && std::find(event_sources.begin(), event_sources.end(), source) == event_sources.end()) {
    problems.emplace_back("event_source", "must be web, app, offline or crm" + got(source));
  }
  const std::string_view id = setting(settings, "event_source_id");
  if (id.empty()) {
    problems.emplace_back("event_source_id", "is required (the pixel code or event set id)");
  } else if (has_blank_or_control(id)) {
    problems.emplace_back("event_source_id", "must not contain spaces or control characters" + got(id));
  }
  if (const auto url = setting(settings, "base_url"); !url.empty()) {
    if (auto problem = base_url_problem(url); !problem.empty()) problems.emplace_back("base_url", problem + got(url));
  }
  if (const auto code = setting(settings, "test_event_code"); has_control(code)) {
    problems.emplace_back("test_event_code", "must not contain control characters");
  }
  if (const auto size = setting(settings, "batch_size"); !size.empty() && !parse_size(size, 1, tiktok_max_batch_size)) {
    problems.emplace_back("batch_size",
                          "must be a whole number from 1 to " + std::to_string(tiktok_max_batch_size) + got(size));
  }
  if (const auto code = setting(settings, "default_phone_country_code");
      !code.empty() && !calling_code_problem(code).empty()) {
    problems.emplace_back("default_phone_country_code",
                          "must be a country calling code of 1 to 3 digits, such as 1 or 44" + got(code));
  }
  if (const auto source = setting(settings, "lead_event_source"); has_control(source) || source.size() > 100) {
    problems.emplace_back("lead_event_source", "must be at most 100 characters without control characters");
  }
  if (const auto days = setting(settings, "max_event_age_days"); !days.empty() && !parse_size(days, 1, 90)) {
    problems.emplace_back("max_event_age_days", "must be a whole number of days from 1 to 90" + got(days));
  }

  return problems;
}

tiktok_destination make_tiktok_destination(const settings_map& settings) {
  tiktok_destination d;
  d.access_token = std::string{setting(settings, "access_token")};
  if (const auto v = setting(settings, "event_source"); !v.empty()) d.event_source = std::string{v};
  d.event_source_id = std::string{setting(settings, "event_source_id")};
  if (const auto v = setting(settings, "base_url"); !v.empty()) d.base_url = strip_trailing_slashes(v);
  d.test_event_code = std::string{setting(settings, "test_event_code")};
  if (const auto v = parse_size(setting(settings, "batch_size"), 1, tiktok_max_batch_size)) d.batch_size = *v;
  d.default_phone_country_code = calling_code(setting(settings, "default_phone_country_code"));
  if (const auto v = setting(settings, "lead_event_source"); !v.empty()) d.lead_event_source = std::string{v};
  d.max_event_age_days = tiktok_default_max_age_days(d.event_source);
  if (const auto v = parse_size(setting(settings, "max_event_age_days"), 1, 90)) {
    d.max_event_age_days = static_cast<std::int64_t>(*v);
  }
  return d;
}

std::int64_t tiktok_default_max_age_days(std::string_view event_source) {
  return event_source == "web" || event_source == "app" ? 7 : 28;
}

std::optional<std::string> tiktok_event_time_problem(std::int64_t event_time, const tiktok_destination& destination,
                                                     std::chrono::system_clock::time_point now) {
  const std::int64_t now_s = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::int64_t age = now_s - event_time;
  if (-age > tiktok_max_future_seconds) {
    return "event_time is " + std::to_string(-age / 60) + " minutes in the future; check the CRM's clock and time zone";
  }
  if (age <= destination.max_event_age_days * 86400) return std::nullopt;
  return "event_time is " + std::to_string(age / 86400) + " days old; TikTok takes " + destination.event_source +
         " events up to " + std::to_string(destination.max_event_age_days) + " days old (max_event_age_days)";
}

std::string tiktok_track_url(const tiktok_destination& destination) {
  return destination.base_url + std::string{tiktok_track_path};
}

json tiktok_event_json(const outbound_event& event, const canonical_event& c, const tiktok_destination& destination,
                       dropped_fields& dropped, std::chrono::system_clock::time_point now) {
  json e = json::object();
  e["event"] = event.event_name;
  e["event_time"] = c.event_time;
  e["event_id"] = event.idempotency_key;

  // One value as a string, several as a list (TikTok takes both).
  user_field_reader fields{c, destination.default_phone_country_code, dropped, now};
  json user = json::object();
  const auto hashed = [&](const char* key, pii_field field, const std::vector<std::string>& raws) {
    auto values = fields.hashed(key, field, raws);
    if (values.size() == 1) user[key] = std::move(values.front());
    else if (!values.empty()) user[key] = std::move(values);
  };
  hashed("email", pii_field::email, c.email);
  hashed("phone", pii_field::phone_e164, c.phone);
  hashed("external_id", pii_field::external_id, c.external_id);
  if (c.ttclid) user["ttclid"] = *c.ttclid;
  if (c.ttp) user["ttp"] = *c.ttp;
  if (c.client_ip) user["ip"] = *c.client_ip;
  if (c.user_agent) user["user_agent"] = *c.user_agent;
  e["user"] = std::move(user);

  json properties = json::object();
  if (c.currency) properties["currency"] = *c.currency;
  if (c.value) properties["value"] = *c.value;
  if (c.order_id) properties["order_id"] = *c.order_id;
  if (!properties.empty()) e["properties"] = std::move(properties);

  if (c.event_source_url) e["page"] = json{{"url", *c.event_source_url}};

  if (destination.event_source == "crm") {
    json lead = json::object();
    if (c.lead_id) lead["lead_id"] = *c.lead_id;
    lead["lead_event_source"] = destination.lead_event_source;
    e["lead"] = std::move(lead);
  }

  merge_extra(e, c.extra_for("tiktok"));
  e["event_id"] = event.idempotency_key;  // the dedup key is ours, whatever extra says
  return e;
}

json tiktok_event_json(const outbound_event& event, const canonical_event& canonical,
                       const tiktok_destination& destination, std::chrono::system_clock::time_point now) {
  dropped_fields ignored;
  return tiktok_event_json(event, canonical, destination, ignored, now);
}

std::vector<std::string> tiktok_match_keys(const json& event) {
  const auto user = event.find("user");
  if (user == event.end() || !user->is_object()) return {};
  const auto has = [&](const char* key) { return user->contains(key); };
  std::vector<std::string> keys;
  const auto add = [&](std::string_view key, bool present) {
    if (present) keys.emplace_back(key);
  };
  add(match_key::email, has("email"));
  add(match_key::phone, has("phone"));
  add(match_key::external_id, has("external_id"));
  add(match_key::click_id, has("ttclid"));
  add(match_key::browser_id, has("ttp"));
  add(match_key::ip_user_agent, has("ip") && has("user_agent"));
  if (const auto lead = event.find("lead"); lead != event.end() && lead->is_object() && lead->contains("lead_id")) {
    keys.emplace_back(match_key::lead_id);
  }
  return keys;
}

std::optional<tiktok_response> parse_tiktok_response(std::string_view body) {
  const json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  const auto code = doc.find("code");
  if (code == doc.end() || !code->is_number_integer()) return std::nullopt;
  tiktok_response r;
  r.code = code->get<long long>();
  if (const auto m = doc.find("message"); m != doc.end() && m->is_string()) r.message = m->get<std::string>();
  if (const auto id = doc.find("request_id"); id != doc.end() && id->is_string()) r.request_id = id->get<std::string>();
  return r;
}

tiktok_code_action tiktok_action_for(long long code) {
  switch (code) {
    case 0: return tiktok_code_action::delivered;
    case 40100:  // too many requests
    case 40132:  // frequency limit
    case 50000:  // system error
    case 50002:  // system error
    case 60001:  // maintenance
    case 61000: return tiktok_code_action::retry;
    case 40102:  // access token expired
    case 40104:  // access token empty
    case 40105:  // access token invalid or revoked
      return tiktok_code_action::pause_destination;
    default: break;
  }
  // Undocumented system-side codes: retrying is the safe side (TikTok dedups on event_id).
  if (code >= 50000) return tiktok_code_action::retry;
  return tiktok_code_action::reject_batch;
}

std::string tiktok_error_text(const tiktok_response& response) {
  std::string text = "TikTok code " + std::to_string(response.code) + ": ";
  text += response.message.empty() ? std::string{"no message"} : one_line_excerpt(response.message, 300);
  if (!response.request_id.empty()) text += " [request_id " + one_line_excerpt(response.request_id, 80) + "]";
  return text;
}

tiktok_provider::tiktok_provider(tiktok_destination destination) : destination_(std::move(destination)) {}

namespace {

struct tiktok_prepared final : prepared_state {
  json event;  // one entry of "data"
};

}  // namespace

preparation tiktok_provider::prepare(const outbound_event& event, std::chrono::system_clock::time_point now) const {
  preparation out;
  auto parsed = canonical_event_of(event, out);
  if (!parsed) return out;
  auto& c = *parsed;
  out.error = tiktok_event_time_problem(c.event_time, destination_, now);
  if (!out.error && destination_.event_source == "web" && !c.event_source_url) {
    out.error = "event_source_url: required by TikTok for web events (page.url)";
  }
  if (out.error) return out;
  auto state = std::make_shared<tiktok_prepared>();
  state->event = tiktok_event_json(event, c, destination_, out.dropped, now);
  out.match_keys = tiktok_match_keys(state->event);
  out.state = std::move(state);
  return out;
}

http_request tiktok_provider::build_request(std::span<const outbound_event> events,
                                            std::chrono::system_clock::time_point now) const {
  json data = json::array();
  for_each_prepared<tiktok_prepared>(*this, events, now, [&](const tiktok_prepared& p) { data.push_back(p.event); });
  json body = json::object();
  body["event_source"] = destination_.event_source;
  body["event_source_id"] = destination_.event_source_id;
  body["data"] = std::move(data);
  if (!destination_.test_event_code.empty()) body["test_event_code"] = destination_.test_event_code;

  http_request request;
  request.method = "POST";
  request.url = tiktok_track_url(destination_);
  request.headers.emplace_back("content-type", "application/json");
  request.headers.emplace_back("access-token", destination_.access_token);
  request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return request;
}

batch_outcome tiktok_provider::classify(std::span<const outbound_event> events, const http_result& result,
                                        std::chrono::system_clock::time_point now) const {
  const std::size_t n = events.size();
  if (!result.response) return uniform_outcome(n, result, now);
  const int status = result.response->status;
  const auto response = parse_tiktok_response(result.response->body);
  if (!response) {
    if (status >= 200 && status <= 299) {
      // A 2xx that is not TikTok's envelope (a proxy?): not proof of delivery. TikTok
      // dedups a resend on event_id within 48 h, so retrying is the safe side.
      event_outcome outcome;
      outcome.kind = outcome_kind::retry;
      outcome.error = "HTTP " + std::to_string(status) +
                      " without a TikTok response code: " + one_line_excerpt(result.response->body, 200);
      return batch_outcome{std::vector<event_outcome>(n, outcome), std::nullopt, false};
    }
    return uniform_outcome(n, result, now);  // 5xx/429 retry, 401/403 pause, other 4xx dead
  }

  const std::string text = tiktok_error_text(*response);
  batch_outcome out;
  event_outcome outcome;
  auto action = tiktok_action_for(response->code);
  if (action == tiktok_code_action::delivered && (status < 200 || status > 299)) return uniform_outcome(n, result, now);
  if (action == tiktok_code_action::reject_batch && is_retryable_status(status)) action = tiktok_code_action::retry;
  switch (action) {
    case tiktok_code_action::delivered: outcome.kind = outcome_kind::delivered; break;
    case tiktok_code_action::retry:
      outcome.kind = outcome_kind::retry;
      outcome.error = text;
      if (const auto header = result.response->header("retry-after")) {
        outcome.retry_after = parse_retry_after(*header, now);
      }
      break;
    case tiktok_code_action::pause_destination:
      outcome.kind = outcome_kind::retry;  // the rows are not at fault
      outcome.error = text;
      out.pause_destination = "TikTok refused the access token (fix access_token): " + text;
      break;
    case tiktok_code_action::reject_batch:
      outcome.error = text;
      if (n > 1) {
        outcome.kind = outcome_kind::retry;
        outcome.resend_alone = true;
        outcome.error += " (batch of " + std::to_string(n) + " refused; resending each event alone)";
      } else {
        outcome.kind = outcome_kind::dead;
      }
      break;
  }
  out.events.assign(n, outcome);
  return out;
}

}  // namespace outbox::providers

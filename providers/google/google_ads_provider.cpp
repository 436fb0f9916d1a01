#include "providers/google/google_ads_provider.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <stdexcept>

#include "providers/google/google_text.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/setting_checks.hpp"

namespace outbox::providers {

using google_detail::string_or_empty;
using nlohmann::json;
using setting_checks::setting;
using std::chrono::system_clock;

// ==== google_ads ================================================================

std::string google_ads_destination::url() const {
  return base_url + "/" + api_version + "/customers/" + customer_id + ":uploadClickConversions";
}

std::string google_ads_destination::conversion_action() const {
  return "customers/" + customer_id + "/conversionActions/" + conversion_action_id;
}

std::string google_ads_date_time(std::int64_t unix_seconds) {
  std::string rfc = format_rfc3339_utc(unix_seconds);  // "YYYY-MM-DDTHH:MM:SSZ"
  rfc[10] = ' ';
  rfc.pop_back();
  return rfc + "+00:00";
}

json google_ads_conversion(const google_event& e, const outbound_event& event, const google_ads_destination& d) {
  json c = json::object();
  // One click id: gclid first, then gbraid, then wbraid (Google wants exactly one).
  if (!e.gclid.empty()) {
    c["gclid"] = e.gclid;
  } else if (!e.gbraid.empty()) {
    c["gbraid"] = e.gbraid;
  } else if (!e.wbraid.empty()) {
    c["wbraid"] = e.wbraid;
  }
  c["conversionDateTime"] = google_ads_date_time(e.event_time);
  if (e.value) c["conversionValue"] = *e.value;
  if (!e.currency.empty()) c["currencyCode"] = e.currency;
  json identifiers = json::array();
  for (const auto& h : e.hashed_emails) identifiers.push_back({{"hashedEmail", h}});
  for (const auto& h : e.hashed_phones) identifiers.push_back({{"hashedPhoneNumber", h}});
  while (identifiers.size() > google_ads_max_user_identifiers) identifiers.erase(identifiers.size() - 1);
  if (!identifiers.empty()) c["userIdentifiers"] = std::move(identifiers);
  // Click conversions take ad_user_data only: Google documents ad_personalization for
  // OfflineUserDataJobService and UserDataService alone.
  if (e.ad_user_data) c["consent"] = {{"adUserData", to_string(*e.ad_user_data)}};
  merge_extra(c, e.extra.is_object() ? &e.extra : nullptr);
  // Ours whatever extra says: the dedup id and the destination.
  c["orderId"] = event.idempotency_key;
  c["conversionAction"] = d.conversion_action();
  return c;
}

std::vector<std::optional<std::size_t>> google_ads_request_rows(std::span<const json> conversions) {
  std::vector<std::optional<std::size_t>> rows;
  rows.reserve(conversions.size());
  std::set<std::string> order_ids;
  std::set<std::pair<std::string, std::string>> clicks;  // (click id, conversionDateTime)
  std::size_t next = 0;
  for (const json& c : conversions) {
    const std::string order_id = string_or_empty(c, "orderId");
    std::string click;
    for (const char* id : {"gclid", "gbraid", "wbraid"}) {
      if (const std::string v = string_or_empty(c, id); !v.empty()) {
        click = std::string{id} + ":" + v;
        break;
      }
    }
    const std::string when = string_or_empty(c, "conversionDateTime");
    const bool repeat_order = !order_id.empty() && order_ids.contains(order_id);
    const bool repeat_click = !click.empty() && clicks.contains({click, when});
    if (repeat_order || repeat_click) {
      rows.emplace_back(std::nullopt);
      continue;
    }
    if (!order_id.empty()) order_ids.insert(order_id);
    if (!click.empty()) clicks.emplace(click, when);
    rows.emplace_back(next++);
  }
  return rows;
}

google_ads_provider::google_ads_provider(google_ads_destination destination) : destination_(std::move(destination)) {
  if (destination_.customer_id.empty() || destination_.conversion_action_id.empty()) {
    throw std::invalid_argument("google_ads_provider: customer_id and conversion_action_id are required");
  }
  destination_.batch_size = std::clamp<std::size_t>(destination_.batch_size, 1, google_ads_max_batch);
}

namespace {

struct google_ads_prepared final : prepared_state {
  json conversion;  // one entry of "conversions"
};

}  // namespace

preparation google_ads_provider::prepare(const outbound_event& event, system_clock::time_point now) const {
  preparation out;
  auto read = read_google_event(event, "google_ads", destination_.default_phone_country_code, now);
  if (const auto* error = std::get_if<std::string>(&read)) {
    out.error = *error;
    return out;
  }
  auto& e = std::get<google_event>(read);
  out.dropped = std::move(e.dropped);
  out.error = google_event_problem(e, event,
                                   "a Google Ads click conversion needs gclid, gbraid or wbraid, or an email or phone "
                                   "that can be hashed (enhanced conversions for leads)",
                                   "orderId");
  if (out.error) return out;
  if (const auto ids = e.hashed_emails.size() + e.hashed_phones.size(); ids > google_ads_max_user_identifiers) {
    out.dropped.push_back({"user identifiers", "too_many_values",
                           std::to_string(ids - google_ads_max_user_identifiers) + " over Google's limit of " +
                               std::to_string(google_ads_max_user_identifiers) + " per conversion"});
  }
  out.match_keys = e.match_keys();
  auto state = std::make_shared<google_ads_prepared>();
  state->conversion = google_ads_conversion(e, event, destination_);
  out.state = std::move(state);
  return out;
}

http_request google_ads_provider::build_request(std::span<const outbound_event> events,
                                                system_clock::time_point now) const {
  std::vector<json> conversions;
  conversions.reserve(events.size());
  for_each_prepared<google_ads_prepared>(*this, events, now,
                                         [&](const google_ads_prepared& p) { conversions.push_back(p.conversion); });
  const auto rows = google_ads_request_rows(conversions);
  json sent = json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i]) sent.push_back(std::move(conversions[i]));
  }
  json body{{"conversions", std::move(sent)}, {"partialFailure", true}};
  if (destination_.validate_only) body["validateOnly"] = true;

  http_request request;
  request.method = "POST";
  request.url = destination_.url();
  request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  request.headers.emplace_back("content-type", "application/json");
  if (!destination_.developer_token.empty())
    request.headers.emplace_back("developer-token", destination_.developer_token);
  if (!destination_.login_customer_id.empty()) {
    request.headers.emplace_back("login-customer-id", destination_.login_customer_id);
  }
  static constexpr std::array<std::string_view, 4> own{"content-type", "developer-token", "login-customer-id",
                                                       "authorization"};
  for (const auto& header : destination_.extra_headers) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::string& name = header.first;
    if (std::none_of(own.begin(), own.end(), [&](std::string_view o) { return iequals(o, name); })) {
      request.headers.push_back(header);
    }
  }
  return request;
}

batch_outcome google_ads_provider::classify(std::span<const outbound_event> events, const http_result& result,
                                            system_clock::time_point now) const {
  std::vector<json> conversions;
  conversions.reserve(events.size());
  // The conversions as prepare() built them: classify never parses or hashes again.
  for (const auto& event : events) {
    if (const auto* ready = prepared_as<google_ads_prepared>(event)) {
      conversions.push_back(ready->conversion);
    } else if (auto p = prepare(event, now); !p.error) {
      conversions.push_back(static_cast<const google_ads_prepared&>(*p.state).conversion);
    } else {
      conversions.push_back(json{{"orderId", event.idempotency_key}});
    }
  }
  return classify_google_ads_result(google_ads_request_rows(conversions), result, now);
}

std::vector<std::pair<std::string, std::string>> validate_google_ads_settings(
    const std::map<std::string, std::string>& settings) {
  using namespace google_settings;
  problem_list problems;
  check_accounts(settings,
                 {"customer_id", "the Google Ads account that owns the conversion action, 10 digits, dashes allowed",
                  "login_customer_id"},
                 problems);
  if (const auto v = trim_blanks(setting(settings, "api_version")); !v.empty()) {
    if (v.size() < 2 || v.front() != 'v' || !is_digits(v.substr(1)) || v.size() > 4) {
      problems.emplace_back("api_version", "must look like v26 (got \"" + one_line_excerpt(v, 40) + "\")");
    }
  }
  const auto token = setting(settings, "developer_token");
  if (std::any_of(token.begin(), token.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x21 || c == 0x7f; })) {
    problems.emplace_back("developer_token", "must not contain spaces or control characters");
  }
  check_common(settings, google_ads_max_batch, problems);
  return problems;
}

google_ads_destination make_google_ads_destination(const std::map<std::string, std::string>& settings,
                                                   header_list extra_headers) {
  using namespace google_settings;
  if (!validate_google_ads_settings(settings).empty()) {
    throw std::invalid_argument("google_ads settings are not valid (run `dispatcher config`)");
  }
  google_ads_destination d;
  if (const auto url = setting(settings, "base_url"); !url.empty()) d.base_url = *base_url(url);
  if (const auto v = trim_blanks(setting(settings, "api_version")); !v.empty()) d.api_version = std::string{v};
  d.customer_id = *customer_id(setting(settings, "customer_id"));
  d.conversion_action_id = std::string{trim_blanks(setting(settings, "conversion_action_id"))};
  if (const auto login = setting(settings, "login_customer_id"); !trim_blanks(login).empty()) {
    d.login_customer_id = *customer_id(login);
  }
  d.developer_token = std::string{setting(settings, "developer_token")};
  d.oauth = oauth_from(settings);
  if (const auto v = setting(settings, "validate_only"); !v.empty()) d.validate_only = *parse_bool(trim_blanks(v));
  if (const auto v = trim_blanks(setting(settings, "batch_size")); !v.empty())
    d.batch_size = std::stoul(std::string{v});
  auto code = trim_blanks(setting(settings, "default_phone_country_code"));
  if (!code.empty() && code.front() == '+') code.remove_prefix(1);
  d.default_phone_country_code = std::string{code};
  d.extra_headers = std::move(extra_headers);
  return d;
}

}  // namespace outbox::providers

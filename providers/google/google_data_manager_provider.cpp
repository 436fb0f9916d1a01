#include "providers/google/google_data_manager_provider.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "providers/google/google_text.hpp"
#include "providers/http/http_outcome.hpp"

namespace outbox::providers {
namespace {

using google_detail::string_or_empty;
using nlohmann::json;
using std::chrono::seconds;
using std::chrono::system_clock;

constexpr std::size_t max_user_identifiers = 10;  // per event (user_data.proto)

// ErrorReason values (google/ads/datamanager/v1/error.proto) that mean no event to
// this destination can be accepted until the account or configuration changes.
constexpr std::array<std::string_view, 10> destination_wide_reasons{
    "PERMISSION_DENIED",
    "NOT_FOUND",
    "INVALID_DESTINATION",
    "INVALID_CONVERSION_ACTION_ID",
    "INVALID_CONVERSION_ACTION_TYPE",
    "TERMS_AND_CONDITIONS_NOT_SIGNED",
    "DESTINATION_ACCOUNT_NOT_ENABLED_ENHANCED_CONVERSIONS_FOR_LEADS",
    "DESTINATION_ACCOUNT_DATA_POLICY_PROHIBITS_ENHANCED_CONVERSIONS",
    "DESTINATION_ACCOUNT_ENHANCED_CONVERSIONS_TERMS_NOT_SIGNED",
    "DATA_PARTNER_USER_LIST_MUTATE_NOT_ALLOWED",
};

bool is_data_manager_destination_wide(const google_error_item& e) {
  return std::find(destination_wide_reasons.begin(), destination_wide_reasons.end(), e.code) !=
         destination_wide_reasons.end();
}

event_outcome held_back_by_transaction_id() {
  event_outcome o = google_retry_outcome(
      "held out of the request: an earlier row of the batch has the same transactionId; sent again on its own");
  o.resend_alone = true;
  return o;
}

}  // namespace

std::string google_data_manager_destination::url() const { return base_url + "/v1/events:ingest"; }

json google_data_manager_destination::destination_json() const {
  json d{{"operatingAccount", {{"accountType", "GOOGLE_ADS"}, {"accountId", account_id}}},
         {"productDestinationId", conversion_action_id}};
  if (!login_account_id.empty()) d["loginAccount"] = {{"accountType", "GOOGLE_ADS"}, {"accountId", login_account_id}};
  return d;
}

std::string_view data_manager_consent(consent_value v) {
  return v == consent_value::granted ? "CONSENT_GRANTED" : "CONSENT_DENIED";
}

// EventSource (event.proto): required in practice (googleapis/google-cloud-php#9201),
// so always sent, from the canonical action_source; extra.google_data_manager.eventSource wins.
std::string_view data_manager_event_source(std::string_view action_source) {
  if (action_source == "website") return "WEB";
  if (action_source == "app") return "APP";
  if (action_source == "physical_store") return "IN_STORE";
  if (action_source == "phone_call") return "PHONE";
  return "OTHER";  // system_generated (a CRM's own events), email, chat, ...
}

json data_manager_event(const google_event& e, const outbound_event& event) {
  json out = json::object();
  out["eventSource"] = data_manager_event_source(e.action_source);
  out["eventTimestamp"] = format_rfc3339_utc(e.event_time);
  if (e.value) out["conversionValue"] = *e.value;
  if (!e.currency.empty()) out["currency"] = e.currency;
  // One click id, as for the Google Ads API: gclid, else gbraid, else wbraid.
  if (!e.gclid.empty()) {
    out["adIdentifiers"] = {{"gclid", e.gclid}};
  } else if (!e.gbraid.empty()) {
    out["adIdentifiers"] = {{"gbraid", e.gbraid}};
  } else if (!e.wbraid.empty()) {
    out["adIdentifiers"] = {{"wbraid", e.wbraid}};
  }
  json identifiers = json::array();
  for (const auto& h : e.hashed_emails) identifiers.push_back({{"emailAddress", h}});
  for (const auto& h : e.hashed_phones) identifiers.push_back({{"phoneNumber", h}});
  if (e.address) {
    json address{{"givenName", e.address->hashed_given_name},
                 {"familyName", e.address->hashed_family_name},
                 {"regionCode", e.address->region_code}};
    address["postalCode"] = e.address->postal_code;
    identifiers.push_back({{"address", std::move(address)}});
  }
  while (identifiers.size() > max_user_identifiers) identifiers.erase(identifiers.size() - 1);
  if (!identifiers.empty()) out["userData"] = {{"userIdentifiers", std::move(identifiers)}};
  json consent = json::object();
  if (e.ad_user_data) consent["adUserData"] = data_manager_consent(*e.ad_user_data);
  if (e.ad_personalization) consent["adPersonalization"] = data_manager_consent(*e.ad_personalization);
  if (!consent.empty()) out["consent"] = std::move(consent);
  merge_extra(out, e.extra.is_object() ? &e.extra : nullptr);
  out["transactionId"] = event.idempotency_key;
  return out;
}

std::vector<std::optional<std::size_t>> data_manager_request_rows(std::span<const json> events) {
  std::vector<std::optional<std::size_t>> rows;
  rows.reserve(events.size());
  std::set<std::string> ids;
  std::size_t next = 0;
  for (const json& e : events) {
    const auto it = e.find("transactionId");
    const std::string id = it != e.end() && it->is_string() ? it->get<std::string>() : std::string{};
    if (!id.empty() && !ids.insert(id).second) {
      rows.emplace_back(std::nullopt);
    } else {
      rows.emplace_back(next++);
    }
  }
  return rows;
}

namespace {

// The line recorded for a refused request: Google's status when the body has one, else the HTTP status and body.
std::string refusal_text(const std::optional<google_status>& parsed, const http_response& response) {
  const int status = response.status;
  std::string text = parsed ? describe_google_status(*parsed)
                            : "HTTP " + std::to_string(status) +
                                  (response.body.empty() ? "" : ": " + one_line_excerpt(response.body, 200));
  if (parsed && parsed->code != status && parsed->code != 0) text = "HTTP " + std::to_string(status) + ": " + text;
  return text;
}

// The delay Google asked for: RetryInfo in the body, else a Retry-After header.
std::optional<seconds> retry_delay(const std::optional<google_status>& parsed, const http_response& response,
                                   system_clock::time_point now) {
  if (parsed && parsed->retry_delay) return parsed->retry_delay;
  if (const auto h = response.header("retry-after")) return parse_retry_after(*h, now);
  return std::nullopt;
}

// The first error that refuses every event of the destination, or nullptr.
const google_error_item* destination_wide_error(const std::optional<google_status>& parsed) {
  if (!parsed) return nullptr;
  for (const auto& e : parsed->errors) {
    if (is_data_manager_destination_wide(e)) return &e;
  }
  return nullptr;
}

// Why the destination is paused, and what on-call should check.
std::string destination_refusal(int status, const google_error_item* wide, const std::string& text) {
  std::string reason = "Data Manager refused the destination (" + text + ")";
  if (status == 403 || (wide != nullptr && wide->code == "PERMISSION_DENIED")) {
    reason +=
        ": check that the OAuth user can reach account_id (through login_account_id when it is a manager "
        "account) and that the refresh token was granted the https://www.googleapis.com/auth/datamanager "
        "scope";
  } else if (status == 404) {
    reason += ": check base_url";
  } else {
    reason +=
        ": check account_id and conversion_action_id (an UPLOAD_CLICKS action of that account) and the "
        "account's conversion settings";
  }
  return reason;
}

// "events.events[2].user_data.user_identifiers[0]" -> "user_data.user_identifiers": the
// path inside the event, without indices, so the metric's label stays bounded.
std::string warning_field(std::string_view path) {
  if (const std::size_t at = path.find("events["); at != std::string_view::npos) {
    const std::size_t close = path.find(']', at);
    path = close == std::string_view::npos ? std::string_view{} : path.substr(close + 1);
    if (!path.empty() && path.front() == '.') path.remove_prefix(1);
  }
  std::string out;
  bool in_index = false;
  for (const char c : path) {
    if (c == '[') in_index = true;
    if (!in_index) out.push_back(c);
    if (c == ']') in_index = false;
  }
  return out.empty() ? "event" : one_line_excerpt(out, 100);
}

// Data Manager v1.8: problems with optional fields come back in the 200 as
// fieldWarnings [{reason, description, field}]. A warning that names an event
// goes to that row; one that names none, to every row of the request.
void attach_field_warnings(std::span<const std::optional<std::size_t>> rows, std::size_t in_request,
                           std::string_view body, batch_outcome& out) {
  const json doc = json::parse(body, nullptr, false);
  if (!doc.is_object()) return;
  const auto warnings = doc.find("fieldWarnings");
  if (warnings == doc.end() || !warnings->is_array()) return;
  for (const json& w : *warnings) {
    if (!w.is_object()) continue;
    const std::string path = string_or_empty(w, "field");
    std::string reason = string_or_empty(w, "reason");
    dropped_field note{warning_field(path), reason.empty() ? "WARNING" : one_line_excerpt(reason, 60),
                       one_line_excerpt(string_or_empty(w, "description"), 200)};
    const auto index = google_index_in_path(path, "events");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] && (!index || *index >= in_request || *rows[i] == *index)) out.events[i].warnings.push_back(note);
    }
  }
}

// A refused request of several events: those Google located are dead and the others
// go again together; when Google located none, the batch is halved.
void classify_refused_batch(std::span<const std::optional<std::size_t>> rows, std::size_t in_request,
                            const std::optional<google_status>& parsed, const std::string& text, batch_outcome& out) {
  std::vector<std::optional<std::string>> located(in_request);
  if (parsed) {
    for (const auto& e : parsed->errors) {
      if (e.row && *e.row < in_request && !located[*e.row]) {
        located[*e.row] =
            one_line_excerpt("Data Manager: " + e.code + (e.message.empty() ? "" : ": " + e.message), 400);
      }
    }
  }
  const bool named = std::any_of(located.begin(), located.end(), [](const auto& l) { return l.has_value(); });
  std::vector<std::size_t> innocent;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i]) {
      out.events[i] = held_back_by_transaction_id();
    } else if (located[*rows[i]]) {
      out.events[i] = google_dead_outcome(*located[*rows[i]]);
    } else if (named) {
      // Google named the culprits: the others go again at once, together.
      out.events[i] = google_retry_outcome("the request was refused because of another event in it (" + text +
                                           "); sent again without it");
      out.events[i].resend_group = 1;
    } else {
      innocent.push_back(i);
    }
  }
  if (!innocent.empty()) {
    resend_in_halves(out, innocent,
                     "the request was refused and Google named no event (" + text +
                         "); sent again in halves to find the one at fault");
  }
}

}  // namespace

batch_outcome classify_data_manager_result(std::span<const std::optional<std::size_t>> rows, const http_result& result,
                                           system_clock::time_point now) {
  const std::size_t in_request =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.has_value(); }));
  batch_outcome out;
  out.events.assign(rows.size(), event_outcome{});
  const auto for_sent = [&](const event_outcome& o) {
    for (std::size_t i = 0; i < rows.size(); ++i) out.events[i] = rows[i] ? o : held_back_by_transaction_id();
  };
  if (!result.response) {
    for_sent(classify_http_result(result, now));
    return out;
  }
  const http_response& response = *result.response;
  const int status = response.status;
  if (status >= 200 && status <= 299) {
    // Accepted for asynchronous processing: the requestId is reconciled later.
    event_outcome delivered;
    delivered.kind = outcome_kind::delivered;
    for_sent(delivered);
    out.request_id = data_manager_request_id(response.body);  // none for validateOnly requests
    attach_field_warnings(rows, in_request, response.body, out);
    return out;
  }

  const auto parsed = parse_google_error_body(response.body, "events");
  const std::string text = refusal_text(parsed, response);
  if (status == 401) {
    out.reauthenticate = true;
    for_sent(google_retry_outcome(text));
    return out;
  }
  const google_error_item* wide = destination_wide_error(parsed);
  if (status == 403 || status == 404 || (wide != nullptr && !is_retryable_status(status))) {
    out.pause_destination = one_line_excerpt(destination_refusal(status, wide, text), 600);
    for_sent(google_retry_outcome(text));
    return out;
  }
  if (status == 429 || is_retryable_status(status)) {
    for_sent(google_retry_outcome(text, retry_delay(parsed, response, now)));
    return out;
  }
  // 400 INVALID_ARGUMENT and other 4xx: nothing in the request was ingested.
  if (in_request <= 1) {
    for_sent(google_dead_outcome(text));
    return out;
  }
  classify_refused_batch(rows, in_request, parsed, text, out);
  return out;
}

google_data_manager_provider::google_data_manager_provider(google_data_manager_destination destination)
    : destination_(std::move(destination)) {
  if (destination_.account_id.empty() || destination_.conversion_action_id.empty()) {
    throw std::invalid_argument("google_data_manager_provider: account_id and conversion_action_id are required");
  }
  destination_.batch_size = std::clamp<std::size_t>(destination_.batch_size, 1, google_data_manager_max_batch);
}

namespace {

struct data_manager_prepared final : prepared_state {
  json event;  // one entry of "events"
};

}  // namespace

preparation google_data_manager_provider::prepare(const outbound_event& event, system_clock::time_point now) const {
  preparation out;
  auto read = read_google_event(event, "google_data_manager", destination_.default_phone_country_code, now, true);
  if (const auto* error = std::get_if<std::string>(&read)) {
    out.error = *error;
    return out;
  }
  auto& e = std::get<google_event>(read);
  out.dropped = std::move(e.dropped);
  out.error = google_event_problem(e, event,
                                   "a Data Manager conversion needs gclid, gbraid or wbraid, or an email, phone or "
                                   "address (first_name, last_name, country and zip) that can be used",
                                   "transactionId");
  if (out.error) return out;
  const std::size_t identifiers = e.hashed_emails.size() + e.hashed_phones.size() + (e.address ? 1 : 0);
  if (identifiers > max_user_identifiers) {
    out.dropped.push_back({"user identifiers", "too_many_values",
                           std::to_string(identifiers - max_user_identifiers) + " over Google's limit of " +
                               std::to_string(max_user_identifiers) + " per event"});
  }
  out.match_keys = e.match_keys();
  auto state = std::make_shared<data_manager_prepared>();
  state->event = data_manager_event(e, event);
  out.state = std::move(state);
  return out;
}

http_request google_data_manager_provider::build_request(std::span<const outbound_event> events,
                                                         system_clock::time_point now) const {
  std::vector<json> all;
  all.reserve(events.size());
  for_each_prepared<data_manager_prepared>(*this, events, now,
                                           [&](const data_manager_prepared& p) { all.push_back(p.event); });
  const auto rows = data_manager_request_rows(all);
  json sent = json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i]) sent.push_back(std::move(all[i]));
  }
  json body{{"destinations", json::array({destination_.destination_json()})},
            {"events", std::move(sent)},
            {"encoding", "HEX"}};
  if (destination_.validate_only) body["validateOnly"] = true;

  http_request request;
  request.method = "POST";
  request.url = destination_.url();
  request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  request.headers.emplace_back("content-type", "application/json");
  static constexpr std::array<std::string_view, 2> own{"content-type", "authorization"};
  for (const auto& header : destination_.extra_headers) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::string& name = header.first;
    if (std::none_of(own.begin(), own.end(), [&](std::string_view o) { return iequals(o, name); })) {
      request.headers.push_back(header);
    }
  }
  return request;
}

batch_outcome google_data_manager_provider::classify(std::span<const outbound_event> events, const http_result& result,
                                                     std::chrono::system_clock::time_point now) const {
  std::vector<json> all;
  all.reserve(events.size());
  for (const auto& event : events) all.push_back(json{{"transactionId", event.idempotency_key}});
  return classify_data_manager_result(data_manager_request_rows(all), result, now);
}

}  // namespace outbox::providers

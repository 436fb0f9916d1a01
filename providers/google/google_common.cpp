#include "providers/google/google_common.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "providers/google/google_text.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/user_data/match_keys.hpp"
#include "providers/user_data/user_fields.hpp"

namespace outbox::providers {

using google_detail::string_or_empty;
using nlohmann::json;
using std::chrono::seconds;

namespace {

// Given name, family name, region and postal code are all required in an
// address identifier (user_data.proto); a partial one is left out.
std::optional<google_event::address_info> google_address(const canonical_event& c, user_field_reader& fields) {
  auto given = fields.hashed("first_name", pii_field::given_name_google, c.first_name);
  auto family = fields.hashed("last_name", pii_field::family_name_google, c.last_name);
  auto region = fields.normalized("country", pii_field::country, c.country);
  auto postal = fields.normalized("zip", pii_field::postal_code_google, c.zip);
  if (given.empty() || family.empty() || region.empty() || postal.empty()) return std::nullopt;
  google_event::address_info a;
  a.hashed_given_name = std::move(given.front());
  a.hashed_family_name = std::move(family.front());
  a.region_code = std::move(region.front());
  for (char& ch : a.region_code) ch = static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  a.postal_code = std::move(postal.front());
  return a;
}

}  // namespace

std::variant<google_event, std::string> read_google_event(const outbound_event& event, std::string_view extra_key,
                                                          std::string_view default_phone_country_code,
                                                          std::chrono::system_clock::time_point now,
                                                          bool with_address) {
  auto parsed = parse_canonical_event(event.payload);
  if (const auto* error = std::get_if<field_error>(&parsed)) return error->message();
  auto& c = std::get<canonical_event>(parsed);
  google_event g;
  g.dropped = std::move(c.dropped);
  g.event_time = c.event_time;
  g.action_source = c.action_source;
  g.value = c.value;
  g.currency = c.currency.value_or("");
  g.gclid = c.gclid.value_or("");
  g.gbraid = c.gbraid.value_or("");
  g.wbraid = c.wbraid.value_or("");
  user_field_reader fields{c, default_phone_country_code, g.dropped, now};
  g.hashed_emails = fields.hashed("email", pii_field::email_google, c.email);
  g.hashed_phones = fields.hashed("phone", pii_field::phone_e164, c.phone);
  if (with_address) g.address = google_address(c, fields);
  g.ad_user_data = c.consent.ad_user_data;
  g.ad_personalization = c.consent.ad_personalization;
  if (const json* extra = c.extra_for(extra_key)) g.extra = *extra;
  return g;
}

std::optional<std::string> google_event_problem(const google_event& e, const outbound_event& event,
                                                std::string_view needs, std::string_view key_field) {
  if (!e.has_click_id() && !e.has_user_identifiers()) return "gclid: " + std::string{needs};
  if (e.value && (!std::isfinite(*e.value) || *e.value < 0)) return std::string{"value: must not be negative"};
  if (event.idempotency_key.empty() || event.idempotency_key.size() > 100) {
    return "idempotency key: must be 1 to 100 characters (it is the " + std::string{key_field} + ")";
  }
  return std::nullopt;
}

event_outcome google_retry_outcome(std::string error, std::optional<seconds> after) {
  event_outcome o;
  o.kind = outcome_kind::retry;
  o.error = std::move(error);
  o.retry_after = after;
  return o;
}

event_outcome google_dead_outcome(std::string error) {
  event_outcome o;
  o.kind = outcome_kind::dead;
  o.error = std::move(error);
  return o;
}

std::vector<std::string> google_event::match_keys() const {
  std::vector<std::string> keys;
  if (!hashed_emails.empty()) keys.emplace_back(match_key::email);
  if (!hashed_phones.empty()) keys.emplace_back(match_key::phone);
  if (has_click_id()) keys.emplace_back(match_key::click_id);
  if (address) keys.emplace_back(match_key::address);
  return keys;
}

bool google_status::has_code(std::string_view c) const {
  return std::any_of(errors.begin(), errors.end(), [&](const google_error_item& e) { return e.code == c; });
}

std::optional<seconds> parse_google_duration(std::string_view text) {
  text = trim_blanks(text);
  if (text.size() < 2 || text.back() != 's') return std::nullopt;
  text.remove_suffix(1);
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  const auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || !all_digits(whole) || !all_digits(fraction) ||
      (dot != std::string_view::npos && fraction.empty())) {
    return std::nullopt;
  }
  std::int64_t n = 0;
  for (const char c : whole) n = std::min<std::int64_t>(n * 10 + (c - '0'), max_retry_after.count());
  const bool has_fraction = std::any_of(fraction.begin(), fraction.end(), [](char c) { return c != '0'; });
  if (has_fraction) ++n;  // round up: never come back earlier than asked
  return std::min(seconds{n}, max_retry_after);
}

std::optional<std::size_t> google_index_in_path(std::string_view path, std::string_view list) {
  if (const std::size_t bracket = path.find(std::string{list} + "[");
      bracket != std::string_view::npos && bracket > 0) {
    path.remove_prefix(bracket);
  }
  if (!path.starts_with(list)) return std::nullopt;
  path.remove_prefix(list.size());
  if (path.empty() || (path.front() != '[' && path.front() != '.')) return std::nullopt;
  path.remove_prefix(1);
  std::size_t n = 0;
  std::size_t digits = 0;
  while (!path.empty() && path.front() >= '0' && path.front() <= '9' && digits < 9) {
    n = n * 10 + static_cast<std::size_t>(path.front() - '0');
    path.remove_prefix(1);
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return n;
}

namespace {

void note_delay(google_status& s, const json& value) {
  if (!value.is_string()) return;
  if (const auto d = parse_google_duration(value.get_ref<const std::string&>())) {
    s.retry_delay = s.retry_delay ? std::max(*s.retry_delay, *d) : *d;
  }
}

void read_bad_request(const json& detail, std::string_view list_field, google_status& s) {
  const auto violations = detail.find("fieldViolations");
  if (violations == detail.end() || !violations->is_array()) return;
  for (const json& v : *violations) {
    google_error_item e;
    e.kind = "BadRequest";
    e.code = string_or_empty(v, "reason");
    e.message = string_or_empty(v, "description");
    const std::string field = string_or_empty(v, "field");
    if (!field.empty()) e.message = field + ": " + e.message;
    e.row = google_index_in_path(field, list_field);
    s.errors.push_back(std::move(e));
  }
}

// One entry of Google Ads' GoogleAdsFailure.errors[].
google_error_item read_ads_error(const json& error, std::string_view list_field, google_status& s) {
  google_error_item e;
  if (const auto code = error.find("errorCode"); code != error.end() && code->is_object()) {
    for (const auto& [key, value] : code->items()) {
      if (!value.is_string()) continue;
      e.kind = key;
      e.code = value.get<std::string>();
      break;
    }
  }
  e.message = string_or_empty(error, "message");
  const auto location = error.find("location");
  if (location != error.end() && location->is_object() && location->contains("fieldPathElements") &&
      (*location)["fieldPathElements"].is_array()) {
    for (const json& element : (*location)["fieldPathElements"]) {
      if (string_or_empty(element, "fieldName") == list_field && element.contains("index") &&
          element["index"].is_number_unsigned()) {
        e.row = element["index"].get<std::size_t>();
        break;
      }
    }
  }
  if (const auto more = error.find("details"); more != error.end() && more->is_object()) {
    const auto quota = more->find("quotaErrorDetails");
    if (quota != more->end() && quota->is_object() && quota->contains("retryDelay"))
      note_delay(s, (*quota)["retryDelay"]);
  }
  if (e.code.empty()) e.code = "UNKNOWN";
  return e;
}

// Google Ads' GoogleAdsFailure: {"errors": [{"errorCode": {...}, "message", "location", "details"}]}.
void read_ads_failure(const json& detail, std::string_view list_field, google_status& s) {
  const auto errors = detail.find("errors");
  if (errors == detail.end() || !errors->is_array()) return;
  for (const json& error : *errors) {
    if (!error.is_object()) continue;
    s.errors.push_back(read_ads_error(error, list_field, s));
  }
}

// A field violation without its own reason takes the ErrorInfo reason (Data
// Manager sends both), else the status.
void fill_missing_reasons(google_status& s) {
  std::string reason;
  for (const auto& e : s.errors) {
    if (e.kind == "ErrorInfo") {
      reason = e.code;
      break;
    }
  }
  for (auto& e : s.errors) {
    if (e.kind == "BadRequest" && e.code.empty())
      e.code = !reason.empty() ? reason : !s.status.empty() ? s.status : "INVALID_ARGUMENT";
  }
}

}  // namespace

google_status parse_google_status(const json& status, std::string_view list_field) {
  google_status s;
  if (!status.is_object()) return s;
  if (const auto it = status.find("code"); it != status.end() && it->is_number_integer()) s.code = it->get<int>();
  s.status = string_or_empty(status, "status");
  s.message = string_or_empty(status, "message");
  const auto details = status.find("details");
  if (details == status.end() || !details->is_array()) return s;
  for (const json& detail : *details) {
    if (!detail.is_object()) continue;
    const std::string type = string_or_empty(detail, "@type");
    if (type.ends_with("google.rpc.RetryInfo")) {
      if (detail.contains("retryDelay")) note_delay(s, detail["retryDelay"]);
    } else if (type.ends_with("google.rpc.ErrorInfo")) {
      google_error_item e;
      e.kind = "ErrorInfo";
      e.code = string_or_empty(detail, "reason");
      e.message = s.message;
      if (!e.code.empty()) s.errors.push_back(std::move(e));
    } else if (type.ends_with("google.rpc.BadRequest")) {
      read_bad_request(detail, list_field, s);
    } else {
      read_ads_failure(detail, list_field, s);
    }
  }
  fill_missing_reasons(s);
  return s;
}

std::optional<google_status> parse_google_error_body(std::string_view body, std::string_view list_field) {
  const json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object()) return std::nullopt;
  return parse_google_status(doc["error"], list_field);
}

std::string describe_google_status(const google_status& s) {
  std::string text;
  if (s.code != 0) text = "HTTP " + std::to_string(s.code);
  if (!s.status.empty()) text += (text.empty() ? "" : " ") + s.status;
  if (!s.message.empty()) text += (text.empty() ? "" : ": ") + s.message;
  std::string codes;
  std::set<std::string> seen;
  for (const auto& e : s.errors) {
    // An ErrorInfo reason repeated by a more precise item (a field violation) adds nothing.
    if (e.kind == "ErrorInfo" && std::any_of(s.errors.begin(), s.errors.end(), [&](const google_error_item& o) {
          return o.kind != "ErrorInfo" && o.code == e.code;
        })) {
      continue;
    }
    const std::string message = e.message == s.message ? std::string{} : e.message;
    if (!seen.insert(e.code + "\n" + message).second) continue;
    if (!codes.empty()) codes += "; ";
    codes += e.code;
    if (!message.empty()) codes += ": " + message;
    if (seen.size() >= 3) break;
  }
  if (!codes.empty()) text += " (" + codes + ")";
  return one_line_excerpt(text, 400);
}

}  // namespace outbox::providers

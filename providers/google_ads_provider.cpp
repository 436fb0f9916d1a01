#include "providers/google_ads_provider.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <stdexcept>

#include "providers/http_outcome.hpp"
#include "providers/user_data.hpp"

namespace outbox::providers {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using std::chrono::system_clock;

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    return lower(x) == lower(y);
  });
}

std::string_view setting(const std::map<std::string, std::string>& settings, std::string_view key) {
  const auto it = settings.find(std::string{key});
  return it == settings.end() ? std::string_view{} : std::string_view{it->second};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "conversions[3].gclid" / "events.3" / "events[3]" -> 3 when the path starts with `list`.
std::optional<std::size_t> index_in_path(std::string_view path, std::string_view list) {
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

std::string string_or_empty(const json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

// Codes that mean no conversion to this destination can succeed until someone
// changes the account or the configuration.
constexpr std::array<std::string_view, 7> destination_wide_codes{
    "NO_CONVERSION_ACTION_FOUND",
    "INVALID_CONVERSION_ACTION_TYPE",
    "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE",
    "CUSTOMER_NOT_ACCEPTED_CUSTOMER_DATA_TERMS",
    "CUSTOMER_DATA_POLICY_PROHIBITS_ENHANCED_CONVERSIONS",
    "CUSTOMER_NOT_ENABLED_ENHANCED_CONVERSIONS_FOR_LEADS",
    "USER_PERMISSION_DENIED",
};

// Error kinds about credentials and account access: destination-wide whatever the code.
bool is_access_kind(std::string_view kind) { return kind == "authorizationError" || kind == "authenticationError"; }

bool is_destination_wide(const google_error_item& e) {
  return is_access_kind(e.kind) ||
         std::find(destination_wide_codes.begin(), destination_wide_codes.end(), e.code) != destination_wide_codes.end();
}

std::string allowlist_advice() {
  return " (since 2026-06-15 the Google Ads API accepts offline click conversions only from developers already "
         "allowlisted; configure this destination with the google_data_manager provider instead)";
}

std::string pause_reason(const google_error_item& e, std::string_view context) {
  std::string reason = "Google Ads refused the upload (" + std::string{context} + "): " + e.code;
  if (!e.message.empty()) reason += ": " + one_line_excerpt(e.message, 200);
  if (e.code == "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE") reason += allowlist_advice();
  if (e.code == "NO_CONVERSION_ACTION_FOUND" || e.code == "INVALID_CONVERSION_ACTION_TYPE") {
    reason += " (check conversion_action_id and customer_id: the action must be an UPLOAD_CLICKS action of that "
              "account)";
  }
  return reason;
}

event_outcome retry_outcome(std::string error, std::optional<seconds> after = std::nullopt) {
  event_outcome o;
  o.kind = outcome_kind::retry;
  o.error = std::move(error);
  o.retry_after = after;
  return o;
}

event_outcome dead_outcome(std::string error) {
  event_outcome o;
  o.kind = outcome_kind::dead;
  o.error = std::move(error);
  return o;
}

event_outcome held_back_outcome() {
  event_outcome o = retry_outcome(
      "held out of the request: an earlier row of the batch has the same orderId, or the same click and "
      "conversionDateTime; sent again on its own");
  o.resend_alone = true;
  return o;
}

}  // namespace

// ==== Shared by the Google providers ==========================================

std::variant<google_event, std::string> read_google_event(const outbound_event& event, std::string_view extra_key,
                                                          std::string_view default_phone_country_code) {
  auto parsed = parse_canonical_event(event.payload);
  if (const auto* error = std::get_if<field_error>(&parsed)) return error->message();
  const auto& c = std::get<canonical_event>(parsed);
  google_event g;
  g.event_time = c.event_time;
  g.value = c.value;
  g.currency = c.currency.value_or("");
  g.gclid = c.gclid.value_or("");
  g.gbraid = c.gbraid.value_or("");
  g.wbraid = c.wbraid.value_or("");
  normalize_options options;
  options.default_calling_code = std::string{default_phone_country_code};
  if (c.email) {
    if (auto h = hash_pii(pii_field::email_google, *c.email, options)) g.hashed_emails.push_back(std::move(*h));
  }
  if (c.phone) {
    if (auto h = hash_pii(pii_field::phone_e164, *c.phone, options)) g.hashed_phones.push_back(std::move(*h));
  }
  g.ad_user_data = c.consent.ad_user_data;
  g.ad_personalization = c.consent.ad_personalization;
  if (const json* extra = c.extra_for(extra_key)) g.extra = *extra;
  return g;
}

bool google_status::has_code(std::string_view c) const {
  return std::any_of(errors.begin(), errors.end(), [&](const google_error_item& e) { return e.code == c; });
}

std::optional<seconds> parse_google_duration(std::string_view text) {
  text = trim(text);
  if (text.size() < 2 || text.back() != 's') return std::nullopt;
  text.remove_suffix(1);
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  const auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || !all_digits(whole) || !all_digits(fraction) || (dot != std::string_view::npos && fraction.empty())) {
    return std::nullopt;
  }
  std::int64_t n = 0;
  for (const char c : whole) n = std::min<std::int64_t>(n * 10 + (c - '0'), max_retry_after.count());
  const bool has_fraction = std::any_of(fraction.begin(), fraction.end(), [](char c) { return c != '0'; });
  if (has_fraction) ++n;  // round up: never come back earlier than asked
  return std::min(seconds{n}, max_retry_after);
}

google_status parse_google_status(const json& status, std::string_view list_field) {
  google_status s;
  if (!status.is_object()) return s;
  if (const auto it = status.find("code"); it != status.end() && it->is_number_integer()) s.code = it->get<int>();
  s.status = string_or_empty(status, "status");
  s.message = string_or_empty(status, "message");
  const auto details = status.find("details");
  if (details == status.end() || !details->is_array()) return s;
  const auto note_delay = [&](const json& value) {
    if (!value.is_string()) return;
    if (const auto d = parse_google_duration(value.get_ref<const std::string&>())) {
      s.retry_delay = s.retry_delay ? std::max(*s.retry_delay, *d) : *d;
    }
  };
  for (const json& detail : *details) {
    if (!detail.is_object()) continue;
    const std::string type = string_or_empty(detail, "@type");
    if (type.ends_with("google.rpc.RetryInfo")) {
      if (detail.contains("retryDelay")) note_delay(detail["retryDelay"]);
      continue;
    }
    if (type.ends_with("google.rpc.ErrorInfo")) {
      google_error_item e;
      e.kind = "ErrorInfo";
      e.code = string_or_empty(detail, "reason");
      e.message = s.message;
      if (!e.code.empty()) s.errors.push_back(std::move(e));
      continue;
    }
    if (type.ends_with("google.rpc.BadRequest")) {
      const auto violations = detail.find("fieldViolations");
      if (violations == detail.end() || !violations->is_array()) continue;
      for (const json& v : *violations) {
        google_error_item e;
        e.kind = "BadRequest";
        e.code = string_or_empty(v, "reason");
        e.message = string_or_empty(v, "description");
        const std::string field = string_or_empty(v, "field");
        if (!field.empty()) e.message = field + ": " + e.message;
        e.row = index_in_path(field, list_field);
        s.errors.push_back(std::move(e));
      }
      continue;
    }
    // Google Ads' GoogleAdsFailure: {"errors": [{"errorCode": {...}, "message", "location", "details"}]}.
    const auto errors = detail.find("errors");
    if (errors == detail.end() || !errors->is_array()) continue;
    for (const json& error : *errors) {
      if (!error.is_object()) continue;
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
        if (quota != more->end() && quota->is_object() && quota->contains("retryDelay")) note_delay((*quota)["retryDelay"]);
      }
      if (e.code.empty()) e.code = "UNKNOWN";
      s.errors.push_back(std::move(e));
    }
  }
  // A field violation without its own reason takes the ErrorInfo reason (Data
  // Manager sends both), else the status.
  std::string reason;
  for (const auto& e : s.errors) {
    if (e.kind == "ErrorInfo") {
      reason = e.code;
      break;
    }
  }
  for (auto& e : s.errors) {
    if (e.kind == "BadRequest" && e.code.empty()) e.code = !reason.empty() ? reason : !s.status.empty() ? s.status : "INVALID_ARGUMENT";
  }
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

namespace google_settings {

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::string> customer_id(std::string_view text) {
  std::string digits;
  for (const char c : trim(text)) {
    if (c == '-') continue;
    if (c < '0' || c > '9') return std::nullopt;
    digits += c;
  }
  if (digits.size() != 10) return std::nullopt;
  return digits;
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string_view v = trim(text);
  for (const std::string_view t : {"true", "1", "yes", "on"}) {
    if (iequals(v, t)) return true;
  }
  for (const std::string_view f : {"false", "0", "no", "off"}) {
    if (iequals(v, f)) return false;
  }
  return std::nullopt;
}

std::optional<std::string> base_url(std::string_view text) {
  std::string_view url = trim(text);
  std::size_t scheme = 0;
  if (url.size() >= 8 && iequals(url.substr(0, 8), "https://")) {
    scheme = 8;
  } else if (url.size() >= 7 && iequals(url.substr(0, 7), "http://")) {
    scheme = 7;
  } else {
    return std::nullopt;
  }
  while (url.size() > scheme && url.back() == '/') url.remove_suffix(1);
  const std::string_view rest = url.substr(scheme);
  if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#') return std::nullopt;
  const bool bad = std::any_of(url.begin(), url.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b <= 0x20 || b == 0x7f || c == '?' || c == '#';
  });
  if (bad) return std::nullopt;
  return std::string{url};
}

void check_common(const settings_map& settings, std::size_t max_batch, problem_list& problems) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> oauth_keys{{
      {"client_id", "is required (the OAuth2 client id of the Google Cloud project)"},
      {"client_secret", "is required (the secret of that OAuth2 client)"},
      {"refresh_token", "is required (a refresh token the Google user granted that client, with offline access)"},
  }};
  for (const auto& [key, message] : oauth_keys) {
    if (trim(setting(settings, key)).empty()) problems.emplace_back(std::string{key}, std::string{message});
  }
  if (const auto url = setting(settings, "token_url"); !url.empty() && !base_url(url)) {
    problems.emplace_back("token_url", "must be an https:// (or http://) URL with a host");
  }
  if (const auto v = setting(settings, "validate_only"); !v.empty() && !parse_bool(v)) {
    problems.emplace_back("validate_only", "must be true or false (got \"" + one_line_excerpt(v, 40) + "\")");
  }
  if (const auto v = trim(setting(settings, "batch_size")); !v.empty()) {
    const bool ok = is_digits(v) && v.size() <= 6 && std::stoul(std::string{v}) >= 1 &&
                    std::stoul(std::string{v}) <= max_batch;
    if (!ok) {
      problems.emplace_back("batch_size", "must be a whole number from 1 to " + std::to_string(max_batch) +
                                              " (got \"" + one_line_excerpt(v, 40) + "\")");
    }
  }
  if (auto v = trim(setting(settings, "default_phone_country_code")); !v.empty()) {
    if (v.front() == '+') v.remove_prefix(1);
    if (!is_digits(v) || v.size() > 3 || v.front() == '0') {
      problems.emplace_back("default_phone_country_code",
                            "must be a calling code of 1 to 3 digits such as 1, 44 or +49 (got \"" +
                                one_line_excerpt(setting(settings, "default_phone_country_code"), 40) + "\")");
    }
  }
}

oauth_settings oauth_from(const settings_map& settings) {
  oauth_settings o;
  if (const auto url = setting(settings, "token_url"); !url.empty()) {
    if (const auto u = base_url(url)) o.token_url = *u;
  }
  o.client_id = std::string{trim(setting(settings, "client_id"))};
  o.client_secret = std::string{setting(settings, "client_secret")};
  o.refresh_token = std::string{setting(settings, "refresh_token")};
  return o;
}

}  // namespace google_settings

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
  while (identifiers.size() > 5) identifiers.erase(identifiers.size() - 1);  // Google takes at most 5
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

google_ads_row_verdict google_ads_row_outcome(const google_error_item& error) {
  google_ads_row_verdict v;
  const std::string text = "Google Ads: " + error.code + (error.message.empty() ? "" : ": " + error.message);
  const std::string_view code = error.code;
  if (code == "ORDER_ID_ALREADY_IN_USE" || code == "CLICK_CONVERSION_ALREADY_EXISTS" || code == "CLICK_NOT_FOUND") {
    // The order id is this row's idempotency key: Google already has this
    // conversion. CLICK_NOT_FOUND (enhanced conversions for leads: no click matches
    // the user data) is a warning Google says to ignore: nothing to resend.
    v.outcome.kind = outcome_kind::delivered;
    return v;
  }
  if (code == "TOO_RECENT_EVENT" || code == "TOO_RECENT_CONVERSION_ACTION" || code == "TOO_RECENT_CALL") {
    v.outcome = retry_outcome(text, google_ads_too_recent_delay);
    return v;
  }
  if (is_destination_wide(error)) {
    v.outcome = retry_outcome(text);
    v.pause = pause_reason(error, "partial failure");
    return v;
  }
  const bool transient = error.kind == "internalError" || error.kind == "quotaError" || error.kind == "databaseError" ||
                         code == "INTERNAL_ERROR" || code == "TRANSIENT_ERROR" || code == "RESOURCE_EXHAUSTED" ||
                         code == "CONCURRENT_MODIFICATION" || code == "DEADLINE_EXCEEDED";
  if (transient) {
    v.outcome = retry_outcome(text);
    return v;
  }
  // UNPARSEABLE_GCLID, EVENT_NOT_FOUND, EXPIRED_EVENT, CONVERSION_PRECEDES_EVENT,
  // INVALID_USER_IDENTIFIER, DUPLICATE_*, date and value errors...: resending the
  // same conversion cannot help.
  v.outcome = dead_outcome(one_line_excerpt(text, 400));
  return v;
}

batch_outcome classify_google_ads_result(std::span<const std::optional<std::size_t>> rows, const http_result& result,
                                         system_clock::time_point now) {
  const std::size_t in_request =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.has_value(); }));
  batch_outcome out;
  out.events.assign(rows.size(), event_outcome{});
  // Applies `o` to every row that was in the request; held-back rows are resent alone.
  const auto for_sent = [&](const event_outcome& o) {
    for (std::size_t i = 0; i < rows.size(); ++i) out.events[i] = rows[i] ? o : held_back_outcome();
  };

  if (!result.response) {
    for_sent(classify_http_result(result, now));
    return out;
  }
  const http_response& response = *result.response;
  const int status = response.status;

  if (status >= 200 && status <= 299) {
    const json body = json::parse(response.body, nullptr, false);
    if (!body.is_object()) {
      // Without the body we cannot see row errors. A resend is safe: accepted rows
      // come back as ORDER_ID_ALREADY_IN_USE.
      for_sent(retry_outcome("HTTP " + std::to_string(status) + " with a body that is not a JSON object: " +
                             one_line_excerpt(response.body, 200)));
      return out;
    }
    std::vector<std::optional<google_error_item>> row_errors(in_request);
    std::optional<google_error_item> unlocated;
    if (const auto pfe = body.find("partialFailureError"); pfe != body.end() && pfe->is_object()) {
      const google_status st = parse_google_status(*pfe, "conversions");
      for (const auto& e : st.errors) {
        if (e.row && *e.row < in_request) {
          if (!row_errors[*e.row]) row_errors[*e.row] = e;
        } else if (!unlocated) {
          unlocated = e;
        }
      }
      if (st.errors.empty() && (st.code != 0 || !st.message.empty())) {
        google_error_item e;
        e.kind = "status";
        e.code = st.status.empty() ? "PARTIAL_FAILURE" : st.status;
        e.message = st.message;
        unlocated = e;
      }
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i]) {
        out.events[i] = held_back_outcome();
        continue;
      }
      const auto& error = row_errors[*rows[i]] ? row_errors[*rows[i]] : unlocated;
      if (!error) {
        out.events[i].kind = outcome_kind::delivered;
        continue;
      }
      auto verdict = google_ads_row_outcome(*error);
      out.events[i] = std::move(verdict.outcome);
      if (verdict.pause && !out.pause_destination) out.pause_destination = std::move(verdict.pause);
    }
    return out;
  }

  const auto parsed = parse_google_error_body(response.body, "conversions");
  std::string text = parsed ? describe_google_status(*parsed)
                            : "HTTP " + std::to_string(status) +
                                  (response.body.empty() ? "" : ": " + one_line_excerpt(response.body, 200));
  if (parsed && parsed->code != status && parsed->code != 0) text = "HTTP " + std::to_string(status) + ": " + text;
  const auto header_delay = [&]() -> std::optional<seconds> {
    if (const auto h = response.header("retry-after")) return parse_retry_after(*h, now);
    return std::nullopt;
  };

  if (status == 401) {
    out.reauthenticate = true;
    for_sent(retry_outcome(text));
    return out;
  }
  const google_error_item* wide = nullptr;
  if (parsed) {
    for (const auto& e : parsed->errors) {
      if (is_destination_wide(e)) {
        wide = &e;
        break;
      }
    }
  }
  if (wide != nullptr || status == 403 || status == 404) {
    std::string reason;
    if (wide != nullptr) {
      reason = pause_reason(*wide, "HTTP " + std::to_string(status));
    } else if (status == 404) {
      reason = "Google Ads answered 404 (check base_url, api_version and customer_id): " + text;
    } else {
      reason = "Google Ads refused access (" + text +
               "): check that the OAuth user can reach customer_id (through login_customer_id when it is a "
               "manager account) and that the Cloud project has Google Ads API access";
    }
    out.pause_destination = one_line_excerpt(reason, 600);
    for_sent(retry_outcome(text));
    return out;
  }
  if (status == 429) {
    for_sent(retry_outcome(text, parsed && parsed->retry_delay ? parsed->retry_delay : header_delay()));
    return out;
  }
  if (is_retryable_status(status)) {
    for_sent(retry_outcome(text, parsed && parsed->retry_delay ? parsed->retry_delay : header_delay()));
    return out;
  }
  // 400 INVALID_ARGUMENT and other 4xx: the whole request was refused.
  if (in_request <= 1) {
    for_sent(dead_outcome(text));
    return out;
  }
  // Rows Google named are dead; the others are resent one by one to find out.
  std::vector<std::optional<std::string>> located(in_request);
  if (parsed) {
    for (const auto& e : parsed->errors) {
      if (e.row && *e.row < in_request && !located[*e.row]) {
        located[*e.row] = one_line_excerpt("Google Ads: " + e.code + (e.message.empty() ? "" : ": " + e.message), 400);
      }
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] && located[*rows[i]]) {
      out.events[i] = dead_outcome(*located[*rows[i]]);
    } else {
      out.events[i] = retry_outcome("the request was refused because of another conversion in it (" + text +
                                    "); sent again on its own");
      out.events[i].resend_alone = true;
    }
  }
  return out;
}

google_ads_provider::google_ads_provider(google_ads_destination destination) : destination_(std::move(destination)) {
  if (destination_.customer_id.empty() || destination_.conversion_action_id.empty()) {
    throw std::invalid_argument("google_ads_provider: customer_id and conversion_action_id are required");
  }
  destination_.batch_size = std::clamp<std::size_t>(destination_.batch_size, 1, google_ads_max_batch);
}

std::optional<std::string> google_ads_provider::validate(const outbound_event& event,
                                                         system_clock::time_point /*now*/) const {
  auto read = read_google_event(event, "google_ads", destination_.default_phone_country_code);
  if (const auto* error = std::get_if<std::string>(&read)) return *error;
  const auto& e = std::get<google_event>(read);
  if (!e.has_click_id() && !e.has_user_identifiers()) {
    return std::string{
        "gclid: a Google Ads click conversion needs gclid, gbraid or wbraid, or an email or phone that can be "
        "hashed (enhanced conversions for leads)"};
  }
  if (e.value && (!std::isfinite(*e.value) || *e.value < 0)) return std::string{"value: must not be negative"};
  const std::string_view key = event.idempotency_key;
  if (key.empty() || key.size() > 100) return std::string{"idempotency key: must be 1 to 100 characters (it is the orderId)"};
  return std::nullopt;
}

http_request google_ads_provider::build_request(std::span<const outbound_event> events,
                                                system_clock::time_point /*now*/) const {
  if (events.empty() || events.size() > destination_.batch_size) {
    throw std::logic_error("google_ads_provider::build_request: batch size out of range");
  }
  std::vector<json> conversions;
  conversions.reserve(events.size());
  for (const auto& event : events) {
    auto read = read_google_event(event, "google_ads", destination_.default_phone_country_code);
    if (const auto* error = std::get_if<std::string>(&read)) {
      throw std::logic_error("google_ads_provider::build_request: event was not validated: " + *error);
    }
    conversions.push_back(google_ads_conversion(std::get<google_event>(read), event, destination_));
  }
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
  if (!destination_.developer_token.empty()) request.headers.emplace_back("developer-token", destination_.developer_token);
  if (!destination_.login_customer_id.empty()) {
    request.headers.emplace_back("login-customer-id", destination_.login_customer_id);
  }
  static constexpr std::array<std::string_view, 4> own{"content-type", "developer-token", "login-customer-id",
                                                       "authorization"};
  for (const auto& [name, value] : destination_.extra_headers) {
    if (std::none_of(own.begin(), own.end(), [&](std::string_view o) { return iequals(o, name); })) {
      request.headers.emplace_back(name, value);
    }
  }
  return request;
}

batch_outcome google_ads_provider::classify(std::span<const outbound_event> events, const http_result& result) const {
  std::vector<json> conversions;
  conversions.reserve(events.size());
  for (const auto& event : events) {
    auto read = read_google_event(event, "google_ads", destination_.default_phone_country_code);
    if (auto* e = std::get_if<google_event>(&read)) {
      conversions.push_back(google_ads_conversion(*e, event, destination_));
    } else {
      conversions.push_back(json{{"orderId", event.idempotency_key}});
    }
  }
  return classify_google_ads_result(google_ads_request_rows(conversions), result, system_clock::now());
}

std::vector<std::pair<std::string, std::string>> validate_google_ads_settings(
    const std::map<std::string, std::string>& settings) {
  using namespace google_settings;
  problem_list problems;
  const auto cid = setting(settings, "customer_id");
  if (trim(cid).empty()) {
    problems.emplace_back("customer_id", "is required (the Google Ads account that owns the conversion action, "
                                         "10 digits, dashes allowed)");
  } else if (!customer_id(cid)) {
    problems.emplace_back("customer_id", "must be a 10-digit Google Ads customer id such as 123-456-7890 (got \"" +
                                             one_line_excerpt(cid, 40) + "\")");
  }
  const auto action = trim(setting(settings, "conversion_action_id"));
  if (action.empty()) {
    problems.emplace_back("conversion_action_id", "is required (the id of an UPLOAD_CLICKS conversion action)");
  } else if (!is_digits(action) || action.size() > 20) {
    problems.emplace_back("conversion_action_id",
                          "must be the numeric conversion action id (got \"" + one_line_excerpt(action, 40) + "\")");
  }
  if (const auto login = setting(settings, "login_customer_id"); !trim(login).empty() && !customer_id(login)) {
    problems.emplace_back("login_customer_id", "must be a 10-digit manager account id such as 123-456-7890 (got \"" +
                                                   one_line_excerpt(login, 40) + "\")");
  }
  if (const auto url = setting(settings, "base_url"); !url.empty() && !base_url(url)) {
    problems.emplace_back("base_url", "must be an https:// (or http://) URL with a host and no query");
  }
  if (const auto v = trim(setting(settings, "api_version")); !v.empty()) {
    if (v.size() < 2 || v.front() != 'v' || !is_digits(v.substr(1)) || v.size() > 4) {
      problems.emplace_back("api_version", "must look like v26 (got \"" + one_line_excerpt(v, 40) + "\")");
    }
  }
  const auto token = setting(settings, "developer_token");
  if (std::any_of(token.begin(), token.end(), [](char c) { return static_cast<unsigned char>(c) < 0x21 || c == 0x7f; })) {
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
  if (const auto v = trim(setting(settings, "api_version")); !v.empty()) d.api_version = std::string{v};
  d.customer_id = *customer_id(setting(settings, "customer_id"));
  d.conversion_action_id = std::string{trim(setting(settings, "conversion_action_id"))};
  if (const auto login = setting(settings, "login_customer_id"); !trim(login).empty()) {
    d.login_customer_id = *customer_id(login);
  }
  d.developer_token = std::string{setting(settings, "developer_token")};
  d.oauth = oauth_from(settings);
  if (const auto v = setting(settings, "validate_only"); !v.empty()) d.validate_only = *parse_bool(v);
  if (const auto v = trim(setting(settings, "batch_size")); !v.empty()) d.batch_size = std::stoul(std::string{v});
  auto code = trim(setting(settings, "default_phone_country_code"));
  if (!code.empty() && code.front() == '+') code.remove_prefix(1);
  d.default_phone_country_code = std::string{code};
  d.extra_headers = std::move(extra_headers);
  return d;
}

}  // namespace outbox::providers

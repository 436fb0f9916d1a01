// How the google_ads provider reads Google's answers: each row's outcome from
// partialFailureError, whole-request refusals, and when to pause the destination.
#include <algorithm>
#include <array>

#include "providers/google/google_ads_provider.hpp"
#include "providers/http/http_outcome.hpp"

namespace outbox::providers {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using std::chrono::system_clock;

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
  return is_access_kind(e.kind) || std::find(destination_wide_codes.begin(), destination_wide_codes.end(), e.code) !=
                                       destination_wide_codes.end();
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
    reason +=
        " (check conversion_action_id and customer_id: the action must be an UPLOAD_CLICKS action of that "
        "account)";
  }
  return reason;
}

event_outcome retry_outcome(std::string error, std::optional<seconds> after = std::nullopt) {
  return google_retry_outcome(std::move(error), after);
}

event_outcome dead_outcome(std::string error) { return google_dead_outcome(std::move(error)); }

event_outcome held_back_outcome() {
  event_outcome o = retry_outcome(
      "held out of the request: an earlier row of the batch has the same orderId, or the same click and "
      "conversionDateTime; sent again on its own");
  o.resend_alone = true;
  return o;
}

}  // namespace

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

namespace {

// `o` for every row that was in the request; held-back rows are resent alone.
void for_sent(batch_outcome& out, std::span<const std::optional<std::size_t>> rows, const event_outcome& o) {
  for (std::size_t i = 0; i < rows.size(); ++i) out.events[i] = rows[i] ? o : held_back_outcome();
}

// partialFailureError read into one error per request row, plus the first error
// Google did not locate (it then applies to every row without its own).
struct row_errors {
  std::vector<std::optional<google_error_item>> located;
  std::optional<google_error_item> unlocated;
};

row_errors partial_failure_errors(const json& body, std::size_t in_request) {
  row_errors out;
  out.located.resize(in_request);
  const auto pfe = body.find("partialFailureError");
  if (pfe == body.end() || !pfe->is_object()) return out;
  const google_status st = parse_google_status(*pfe, "conversions");
  for (const auto& e : st.errors) {
    if (e.row && *e.row < in_request) {
      if (!out.located[*e.row]) out.located[*e.row] = e;
    } else if (!out.unlocated) {
      out.unlocated = e;
    }
  }
  if (st.errors.empty() && (st.code != 0 || !st.message.empty())) {
    google_error_item e;
    e.kind = "status";
    e.code = st.status.empty() ? "PARTIAL_FAILURE" : st.status;
    e.message = st.message;
    out.unlocated = e;
  }
  return out;
}

// A 2xx answer: each row's fate is in partialFailureError.
void classify_accepted(std::span<const std::optional<std::size_t>> rows, std::size_t in_request,
                       const http_response& response, batch_outcome& out) {
  const json body = json::parse(response.body, nullptr, false);
  if (!body.is_object()) {
    // Without the body we cannot see row errors. A resend is safe: accepted rows
    // come back as ORDER_ID_ALREADY_IN_USE.
    for_sent(out, rows,
             retry_outcome("HTTP " + std::to_string(response.status) +
                           " with a body that is not a JSON object: " + one_line_excerpt(response.body, 200)));
    return;
  }
  const row_errors errors = partial_failure_errors(body, in_request);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i]) {
      out.events[i] = held_back_outcome();
      continue;
    }
    const auto& error = errors.located[*rows[i]] ? errors.located[*rows[i]] : errors.unlocated;
    if (!error) {
      out.events[i].kind = outcome_kind::delivered;
      continue;
    }
    auto verdict = google_ads_row_outcome(*error);
    out.events[i] = std::move(verdict.outcome);
    if (verdict.pause && !out.pause_destination) out.pause_destination = std::move(verdict.pause);
  }
}

// The pause reason when a refusal means no row can succeed (403, 404, or a
// destination-wide error code); nullopt otherwise.
std::optional<std::string> refusal_pause(int status, const std::optional<google_status>& parsed,
                                         const std::string& text) {
  const google_error_item* wide = nullptr;
  if (parsed) {
    for (const auto& e : parsed->errors) {
      if (is_destination_wide(e)) {
        wide = &e;
        break;
      }
    }
  }
  if (wide == nullptr && status != 403 && status != 404) return std::nullopt;
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
  return one_line_excerpt(reason, 600);
}

// A 400 (or other 4xx) for a request of several rows: the rows Google named are
// dead; the others are resent one by one to find out.
void split_refused_batch(std::span<const std::optional<std::size_t>> rows, std::size_t in_request,
                         const std::optional<google_status>& parsed, const std::string& text, batch_outcome& out) {
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
}

// A non-2xx answer: the whole request was refused.
void classify_refused(std::span<const std::optional<std::size_t>> rows, std::size_t in_request,
                      const http_response& response, system_clock::time_point now, batch_outcome& out) {
  const int status = response.status;
  const auto parsed = parse_google_error_body(response.body, "conversions");
  std::string text = parsed ? describe_google_status(*parsed)
                            : "HTTP " + std::to_string(status) +
                                  (response.body.empty() ? "" : ": " + one_line_excerpt(response.body, 200));
  if (parsed && parsed->code != status && parsed->code != 0) text = "HTTP " + std::to_string(status) + ": " + text;
  const auto delay = [&]() -> std::optional<seconds> {
    if (parsed && parsed->retry_delay) return parsed->retry_delay;
    if (const auto h = response.header("retry-after")) return parse_retry_after(*h, now);
    return std::nullopt;
  };
  if (status == 401) {
    out.reauthenticate = true;
    for_sent(out, rows, retry_outcome(text));
  } else if (auto pause = refusal_pause(status, parsed, text)) {
    out.pause_destination = std::move(pause);
    for_sent(out, rows, retry_outcome(text));
  } else if (status == 429 || is_retryable_status(status)) {
    for_sent(out, rows, retry_outcome(text, delay()));
  } else if (in_request <= 1) {
    for_sent(out, rows, dead_outcome(text));  // 400 INVALID_ARGUMENT and other 4xx
  } else {
    split_refused_batch(rows, in_request, parsed, text, out);
  }
}

}  // namespace

batch_outcome classify_google_ads_result(std::span<const std::optional<std::size_t>> rows, const http_result& result,
                                         system_clock::time_point now) {
  const std::size_t in_request =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.has_value(); }));
  batch_outcome out;
  out.events.assign(rows.size(), event_outcome{});
  if (!result.response) {
    for_sent(out, rows, classify_http_result(result, now));
  } else if (result.response->status >= 200 && result.response->status <= 299) {
    classify_accepted(rows, in_request, *result.response, out);
  } else {
    classify_refused(rows, in_request, *result.response, now, out);
  }
  return out;
}

}  // namespace outbox::providers

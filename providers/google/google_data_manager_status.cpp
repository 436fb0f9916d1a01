// Data Manager's asynchronous side: the requestId of an accepted request and
// what requestStatus:retrieve later says about it (google/ads/datamanager/v1
// request_status_per_destination.proto): SUCCESS, PROCESSING, FAILED,
// PARTIAL_SUCCESS or REQUEST_STATUS_UNKNOWN, with error counts by reason.
#include <algorithm>

#include "providers/google/google_data_manager_provider.hpp"
#include "providers/google/google_text.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/http/query_escape.hpp"
#include "providers/quoted_text.hpp"
#include "providers/text.hpp"

namespace outbox::providers {
namespace {

using nlohmann::json;

// int64 fields arrive as JSON strings in proto3 JSON; numbers are accepted too.
std::string count_text(const json& v) {
  if (v.is_string()) return one_line_excerpt(v.get<std::string>(), 20);
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return "?";
}

// "3 PROCESSING_ERROR_REASON_INVALID_GCLID, 1 ..." from {"errorCounts": [{recordCount, reason}]}.
std::string counts(const json& info, const char* list) {
  std::string out;
  if (!info.is_object()) return out;
  const auto items = info.find(list);
  if (items == info.end() || !items->is_array()) return out;
  for (const auto& item : *items) {
    if (!item.is_object()) continue;
    const auto n = item.find("recordCount");
    const auto reason = item.find("reason");
    out += (out.empty() ? "" : ", ") + (n != item.end() ? count_text(*n) : std::string{"?"}) + " " +
           (reason != item.end() && reason->is_string() ? one_line_excerpt(reason->get<std::string>(), 80) : "?");
  }
  return out;
}

// Google: "repeat ... until the request status is SUCCESS, PARTIAL_SUCCESS, or
// FAILURE": anything else (REQUEST_STATUS_UNKNOWN, a value added later, none at
// all) is not final and is asked again like PROCESSING; the detail names it.
request_state state_of(std::string_view s) {
  if (s == "SUCCESS") return request_state::success;
  if (s == "FAILED" || s == "FAILURE") return request_state::failure;
  if (s == "PARTIAL_SUCCESS") return request_state::partial_success;
  return request_state::processing;
}

// One destination's entry: its status, and the counts Google gives with it.
request_status from_entry(const json& entry) {
  request_status out;
  const auto status = entry.find("requestStatus");
  const std::string name = status != entry.end() && status->is_string() ? status->get<std::string>() : "";
  out.state = state_of(name);
  std::string detail;
  if (name != "PROCESSING" && out.state == request_state::processing) {
    detail = "requestStatus " + (name.empty() ? std::string{"missing"} : one_line_excerpt(name, 60));
  }
  if (const auto ingested = entry.find("eventsIngestionStatus"); ingested != entry.end() && ingested->is_object()) {
    if (const auto n = ingested->find("recordCount"); n != ingested->end()) {
      detail += (detail.empty() ? "" : "; ") + count_text(*n) + " ingested";
    }
  }
  if (const auto e = entry.find("errorInfo"); e != entry.end()) {
    if (auto text = counts(*e, "errorCounts"); !text.empty())
      detail += (detail.empty() ? "" : "; ") + ("errors: " + text);
  }
  if (const auto w = entry.find("warningInfo"); w != entry.end()) {
    if (auto text = counts(*w, "warningCounts"); !text.empty())
      detail += (detail.empty() ? "" : "; ") + ("warnings: " + text);
  }
  out.detail = one_line_excerpt(detail, 600);
  return out;
}

}  // namespace

std::string google_data_manager_destination::status_url(std::string_view request_id) const {
  return base_url + "/v1/requestStatus:retrieve?requestId=" + query_escape(request_id);
}

std::string data_manager_request_id(std::string_view body) {
  const json doc = json::parse(body, nullptr, false);
  if (!doc.is_object()) return {};
  const auto id = doc.find("requestId");
  if (id == doc.end() || !id->is_string()) return {};
  return one_line_excerpt(id->get<std::string>(), 200);
}

request_status read_data_manager_status(const http_result& result) {
  request_status out;
  if (result.response && result.response->status == 429) {
    // Status reads share the project's quota of every non-ingestion call (50,000 a
    // day, 300 a minute): the whole project waits, not just this request.
    out.retry_later = true;
    const auto parsed = parse_google_error_body(result.response->body, "events");
    out.quota_exhausted = parsed && parsed->retry_delay ? *parsed->retry_delay : std::chrono::seconds{0};
    out.detail = "HTTP 429 RESOURCE_EXHAUSTED" +
                 (parsed && !parsed->message.empty() ? ": " + one_line_excerpt(parsed->message, 200) : std::string{});
    return out;
  }
  if (!result.response || is_retryable_status(result.response->status)) {
    out.retry_later = true;
    out.detail =
        result.response ? "HTTP " + std::to_string(result.response->status) : "no answer: " + result.error_message;
    return out;
  }
  const auto& response = *result.response;
  if (response.status == 401 || response.status == 403) {
    out.retry_later = true;  // the token or access is the destination's problem, not the request's
    out.detail = "HTTP " + std::to_string(response.status) + ": " + one_line_excerpt(response.body, 200);
    return out;
  }
  if (response.status < 200 || response.status > 299) {
    out.detail = "HTTP " + std::to_string(response.status) + ": " + one_line_excerpt(response.body, 300);
    return out;  // unknown: Google does not know the request (404) or refused the question
  }
  const json doc = json::parse(response.body, nullptr, false);
  const auto list = doc.is_object() ? doc.find("requestStatusPerDestination") : doc.end();
  if (!doc.is_object() || list == doc.end() || !list->is_array() || list->empty() || !list->front().is_object()) {
    out.retry_later = true;
    out.detail = "unreadable status answer: " + one_line_excerpt(response.body, 200);
    return out;
  }
  return from_entry(list->front());  // one destination per request, in request order
}

std::string google_cloud_project_of(std::string_view client_id) {
  const std::size_t dash = client_id.find('-');
  const std::string_view number = client_id.substr(0, dash == std::string_view::npos ? 0 : dash);
  const bool numbered = !number.empty() && std::all_of(number.begin(), number.end(), is_ascii_digit);
  return "google-cloud-project:" + std::string{numbered ? number : client_id};
}

std::string google_data_manager_provider::status_quota_scope() const {
  return google_cloud_project_of(destination_.oauth.client_id);
}

std::optional<http_request> google_data_manager_provider::status_request(std::string_view request_id) const {
  http_request request;
  request.method = "GET";
  request.url = destination_.status_url(request_id);
  for (const auto& header : destination_.extra_headers) {
    if (!iequals(header.first, "authorization")) request.headers.push_back(header);
  }
  return request;
}

request_status google_data_manager_provider::read_status(const http_result& result) const {
  return read_data_manager_status(result);
}

}  // namespace outbox::providers

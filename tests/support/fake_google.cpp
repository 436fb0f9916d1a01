#include "tests/support/fake_google.hpp"

#include "tests/support/fake_google_wire.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <utility>

namespace outbox::test {
namespace {

using namespace fake_google_wire;
using nlohmann::json;
using clock = std::chrono::steady_clock;

}  // namespace

struct fake_google::state {
  fake_google_options opts;

  mutable std::mutex mutex;
  // OAuth
  bool refresh_revoked = false;
  int token_counter = 0;
  std::map<std::string, clock::time_point, std::less<>> tokens;  // access token -> expiry
  std::vector<std::pair<clock::time_point, clock::time_point>> refresh_intervals;
  int unauthorized = 0;
  // Ads
  std::map<std::string, std::pair<std::string, std::string>> gclid_failures;  // gclid -> (code, message)
  std::set<std::pair<std::string, std::string>> used_order_ids;               // (conversionAction, orderId)
  bool ads_not_allowlisted = false;
  std::vector<json> uploaded;
  // Data Manager
  std::vector<json> ingested;
  std::unique_ptr<fake_request_statuses> statuses;  // its own lock: readable while a handler runs

  // Each handler runs on the server thread with `mutex` held.
  response_plan token(const recorded_request& req);
  response_plan ads(const recorded_request& req, const std::smatch& path);
  response_plan data_manager(const recorded_request& req);
  [[nodiscard]] bool authorized(const recorded_request& req);

  response_plan answer(const recorded_request& req) {
    const std::lock_guard lock{mutex};
    const std::string path = req.target.substr(0, req.target.find('?'));
    if (path == fake_request_statuses::path && req.method == "GET") {
      if (!authorized(req)) return unauthenticated();
      auto plan = statuses->answer(req.target);
      return plan.after(plan.delay + opts.api_delay);
    }
    if (req.method != "POST") return rpc_error(405, "METHOD_NOT_ALLOWED", "only POST is served here");
    if (path == "/token") return token(req).after(opts.token_delay);
    std::smatch m;
    if (std::regex_match(path, m, ads_path())) return ads(req, m).after(opts.api_delay);
    if (path == "/v1/events:ingest") return data_manager(req).after(opts.api_delay);
    return rpc_error(404, "NOT_FOUND", "The requested URL " + path + " was not found on this server.");
  }
};

// ---- OAuth -------------------------------------------------------------------

response_plan fake_google::state::token(const recorded_request& req) {
  const auto now = clock::now();
  refresh_intervals.emplace_back(now, now + opts.token_delay);
  const auto f = form_fields(req.body);
  const auto field = [&](const char* name) {
    const auto it = f.find(name);
    return it == f.end() ? std::string() : it->second;
  };
  if (field("grant_type") != "refresh_token") {
    return json_reply(400, {{"error", "unsupported_grant_type"}, {"error_description", "Invalid grant_type: "}});
  }
  if (field("client_id") != client_id || field("client_secret") != client_secret) {
    return json_reply(401, {{"error", "invalid_client"}, {"error_description", "Unauthorized"}});
  }
  if (refresh_revoked || field("refresh_token") != refresh_token) {
    return json_reply(400, {{"error", "invalid_grant"}, {"error_description", "Token has been expired or revoked."}});
  }
  const std::string access = "ya29.fake-" + std::to_string(++token_counter);
  tokens[access] = now + opts.token_delay + opts.token_lifetime;
  return json_reply(200, {{"access_token", access},
                          {"expires_in", opts.token_lifetime.count()},
                          {"scope", "https://www.googleapis.com/auth/adwords"},
                          {"token_type", "Bearer"}});
}

bool fake_google::state::authorized(const recorded_request& req) {
  const auto header = req.header("authorization").value_or("");
  const std::string_view prefix = "Bearer ";
  bool ok = false;
  if (header.starts_with(prefix)) {
    const auto it = tokens.find(std::string_view(header).substr(prefix.size()));
    ok = it != tokens.end() && clock::now() < it->second;
  }
  if (!ok) ++unauthorized;
  return ok;
}

// ---- Google Ads ----------------------------------------------------------------

response_plan fake_google::state::ads(const recorded_request& req, const std::smatch& path) {
  if (!authorized(req)) return unauthenticated();
  const std::string version = path[1];
  const std::string failure_type = "type.googleapis.com/google.ads.googleads." + version + ".errors.GoogleAdsFailure";
  if (ads_not_allowlisted) {
    return rpc_error(
        403, "PERMISSION_DENIED", "The caller does not have permission",
        json::array({{{"@type", failure_type},
                      {"errors", json::array({{{"errorCode",
                                                {{"notAllowlistedError", "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE"}}},
                                               {"message", "The customer is not allowlisted for this feature."}}})},
                      {"requestId", "fake-ads-request"}}}));
  }
  const json body = json::parse(req.body, nullptr, false);
  const auto bad_request = [&](std::string_view error_kind, std::string_view code, std::string_view message) {
    return rpc_error(
        400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
        json::array({{{"@type", failure_type},
                      {"errors", json::array({{{"errorCode", {{error_kind, code}}}, {"message", message}}})},
                      {"requestId", "fake-ads-request"}}}));
  };
  if (!body.is_object() || !body.contains("conversions") || !body["conversions"].is_array()) {
    return bad_request("requestError", "INVALID_INPUT", "The request body is not an UploadClickConversionsRequest.");
  }
  if (body.value("partialFailure", false) != true) {
    return bad_request("requestError", "INVALID_INPUT", "Partial failure mode is required for this request.");
  }
  const auto& conversions = body["conversions"];
  if (conversions.empty() || conversions.size() > 2000) {
    return bad_request("conversionUploadError", "TOO_MANY_CONVERSIONS_IN_REQUEST",
                       "Upload between 1 and 2000 conversions in a single request.");
  }
  const bool validate_only = body.value("validateOnly", false);

  json results = json::array();
  json errors = json::array();
  std::set<std::string> order_ids_in_request;
  std::vector<std::pair<std::string, std::string>> to_record;
  for (std::size_t i = 0; i < conversions.size(); ++i) {
    const json& c = conversions[i];
    std::optional<std::pair<std::string, std::string>> error;  // (kind:code, message)
    std::string kind = "conversionUploadError";
    const std::string gclid = c.value("gclid", "");
    const std::string action = c.value("conversionAction", "");
    const std::string order_id = c.value("orderId", "");
    const bool has_click = c.contains("gclid") || c.contains("gbraid") || c.contains("wbraid");
    const bool has_user =
        c.contains("userIdentifiers") && c["userIdentifiers"].is_array() && !c["userIdentifiers"].empty();
    if (!std::regex_match(action, std::regex(R"(^customers/\d+/conversionActions/\d+$)"))) {
      error = {
          {"NO_CONVERSION_ACTION_FOUND", "The conversion action specified in the upload request cannot be found."}};
    } else if (!std::regex_match(c.value("conversionDateTime", ""), ads_date_time())) {
      kind = "dateError";
      error = {{"INVALID_FIELD_VALUES_IN_DATE_TIME", "The field values in the date time are invalid."}};
    } else if (!has_click && !has_user) {
      error = {{"EVENT_NOT_FOUND", "The imported event could not be attributed to a click."}};
    } else if (c.contains("gbraid") && c.contains("wbraid")) {
      error = {{"GBRAID_WBRAID_BOTH_SET", "Can't use both gbraid and wbraid parameters."}};
    } else if (c.contains("gclid") && !is_gclid_like(gclid)) {
      error = {{"UNPARSEABLE_GCLID", "The imported gclid could not be decoded."}};
    } else if (const auto it = gclid_failures.find(gclid); c.contains("gclid") && it != gclid_failures.end()) {
      error = it->second;
    } else if (has_user && std::any_of(c["userIdentifiers"].begin(), c["userIdentifiers"].end(), [](const json& u) {
                 const auto field = u.contains("hashedEmail") ? "hashedEmail" : "hashedPhoneNumber";
                 return !u.contains(field) || !is_sha256_hex_any_case(u[field]);
               })) {
      error = {{"INVALID_USER_IDENTIFIER", "Make sure you hash user provided data using SHA-256."}};
    } else if (!order_id.empty() && !order_ids_in_request.insert(order_id).second) {
      error = {{"DUPLICATE_ORDER_ID", "Imported events include multiple conversions with the same order ID."}};
    } else if (!order_id.empty() && used_order_ids.contains({action, order_id})) {
      error = {{"ORDER_ID_ALREADY_IN_USE",
                "The imported event includes an order ID that was previously recorded, so the event was not "
                "processed."}};
    }
    if (error) {
      results.push_back(json::object());
      errors.push_back(
          {{"errorCode", {{kind, error->first}}},
           {"message", error->second.empty() ? error->first : error->second},
           {"trigger", {{"stringValue", gclid}}},
           {"location", {{"fieldPathElements", json::array({{{"fieldName", "conversions"}, {"index", i}}})}}}});
      continue;
    }
    json result{{"conversionAction", action}, {"conversionDateTime", c["conversionDateTime"]}};
    for (const char* id : {"gclid", "gbraid", "wbraid", "orderId"}) {
      if (c.contains(id)) result[id] = c[id];
    }
    results.push_back(std::move(result));
    if (!validate_only) {
      if (!order_id.empty()) to_record.emplace_back(action, order_id);
      uploaded.push_back(c);
    }
  }
  for (auto& key : to_record) used_order_ids.insert(std::move(key));
  json response{{"results", validate_only ? json::array() : results}, {"jobId", "1"}};
  if (!errors.empty()) {
    const std::string first = errors[0]["message"].get<std::string>();
    response["partialFailureError"] = {
        {"code", 3},
        {"message", errors.size() == 1 ? first : "Multiple errors in 'details'. First error: " + first},
        {"details", json::array({{{"@type", failure_type}, {"errors", errors}, {"requestId", "fake-ads-request"}}})}};
  }
  return json_reply(200, response);
}

// ---- Data Manager --------------------------------------------------------------

response_plan fake_google::state::data_manager(const recorded_request& req) {
  keep_ingest_body(req.body);
  if (!authorized(req)) return unauthenticated();
  const json body = json::parse(req.body, nullptr, false);
  const auto invalid = [](std::string_view reason, std::string field, std::string description) {
    json details = json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                                 {"reason", reason},
                                 {"domain", "datamanager.googleapis.com"},
                                 {"metadata", json::object()}}});
    if (!field.empty()) {
      details.push_back(
          {{"@type", "type.googleapis.com/google.rpc.BadRequest"},
           {"fieldViolations", json::array({{{"field", field}, {"description", description}, {"reason", reason}}})}});
    }
    return rpc_error(400, "INVALID_ARGUMENT", description, std::move(details));
  };
  if (!body.is_object()) return invalid("INVALID_ARGUMENT", "", "Invalid JSON payload received.");
  const json destinations = body.value("destinations", json::array());
  if (!destinations.is_array() || destinations.empty()) {
    return invalid("REQUIRED_FIELD_MISSING", "destinations", "At least one destination is required.");
  }
  for (std::size_t i = 0; i < destinations.size(); ++i) {
    const json& d = destinations[i];
    const json account = d.value("operatingAccount", json::object());
    const std::string type = account.value("accountType", account.value("product", ""));
    const std::string id = account.value("accountId", "");
    if (type != "GOOGLE_ADS" || !std::regex_match(id, std::regex(R"(^\d+$)"))) {
      return invalid("INVALID_DESTINATION", "destinations[" + std::to_string(i) + "].operating_account",
                     "This Destination is not valid.");
    }
    if (!std::regex_match(d.value("productDestinationId", ""), std::regex(R"(^\d+$)"))) {
      return invalid("INVALID_CONVERSION_ACTION_ID", "destinations[" + std::to_string(i) + "].product_destination_id",
                     "Conversion action ID is not valid.");
    }
  }
  const json events = body.value("events", json::array());
  if (!events.is_array() || events.empty()) {
    return invalid("REQUIRED_FIELD_MISSING", "events", "At least one event is required.");
  }
  if (events.size() > 2000) return invalid("TOO_MANY_EVENTS", "events", "Too many events in the request.");
  bool has_user_data = false;
  json warnings = json::array();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string at = "events.events[" + std::to_string(i) + "]";  // sic: Google's documented example
    if (!e.contains("eventSource")) {  // required in practice (googleapis/google-cloud-php#9201)
      return invalid("REQUIRED_FIELD_MISSING", at + ".event_source", "Required field is missing.");
    }
    if (!std::regex_match(e.value("eventTimestamp", ""), rfc3339())) {
      return invalid("INVALID_FORMAT", at + ".event_timestamp", "Format is invalid.");
    }
    const json ids = e.value("adIdentifiers", json::object());
    const bool has_click = ids.contains("gclid") || ids.contains("gbraid") || ids.contains("wbraid");
    const json users = e.value("userData", json::object()).value("userIdentifiers", json::array());
    if (!has_click && users.empty()) {
      return invalid("NO_IDENTIFIERS_PROVIDED", at, "Events data contains no user identifiers or ad identifiers.");
    }
    if (!opts.unlocated_refusal_gclid.empty() && ids.value("gclid", "") == opts.unlocated_refusal_gclid) {
      return invalid("INVALID_ARGUMENT", "", "Request contains an invalid argument.");
    }
    if (ids.contains("gclid") && !is_gclid_like(ids.value("gclid", ""))) {
      return invalid("INVALID_FORMAT", at + ".ad_identifiers.gclid", "Format is invalid.");
    }
    for (std::size_t u = 0; u < users.size(); ++u) {
      has_user_data = true;
      const json& id = users[u];
      if (id.contains("address")) {  // AddressInfo: hashed names, plain regionCode
        const json& a = id["address"];
        if (!is_sha256_hex_any_case(a.value("givenName", json())) ||
            !is_sha256_hex_any_case(a.value("familyName", json()))) {
          return invalid("INVALID_SHA256_FORMAT", at + ".user_data.user_identifiers[" + std::to_string(u) + "]",
                         "The SHA256 encoded value is malformed.");
        }
        // v1.8: a problem with an optional field is a warning in the 200, not a refusal.
        if (!std::regex_match(a.value("postalCode", ""), std::regex(R"(^[A-Za-z0-9 -]*$)"))) {
          warnings.push_back(
              {{"reason", "INVALID_FORMAT"},
               {"description", "Format is invalid; the field was ignored."},
               {"field", at + ".user_data.user_identifiers[" + std::to_string(u) + "].address.postal_code"}});
        }
        continue;
      }
      const char* field = id.contains("emailAddress") ? "emailAddress" : "phoneNumber";
      if (!id.contains(field) || !is_sha256_hex_any_case(id[field])) {
        return invalid("INVALID_SHA256_FORMAT", at + ".user_data.user_identifiers[" + std::to_string(u) + "]",
                       "The SHA256 encoded value is malformed.");
      }
    }
  }
  if (has_user_data && body.value("encoding", "") != "HEX" && body.value("encoding", "") != "BASE64") {
    return invalid("INVALID_ARGUMENT", "encoding", "Encoding is required for UserData uploads.");
  }
  if (body.value("validateOnly", false)) return json_reply(200, json::object());
  for (const auto& e : events) ingested.push_back(e);
  json answer{{"requestId", statuses->accept(events.size(), destinations[0])}};
  if (!warnings.empty()) answer["fieldWarnings"] = std::move(warnings);
  return json_reply(200, answer);
}

// ---- public ----------------------------------------------------------------------

fake_google::fake_google(const test_ca& ca, fake_google_options opts)
    : state_(std::make_unique<state>()), server_(tls_for(ca)) {
  state_->opts = opts;
  state_->statuses = std::make_unique<fake_request_statuses>(opts.processing_reads);
  state* st = state_.get();
  server_.set_fallback([st](const recorded_request& req) { return st->answer(req); });
}

fake_google::~fake_google() { server_.stop(); }

std::string fake_google::base_url() const { return server_.url("", "localhost"); }

std::string fake_google::token_url() const { return server_.url("/token", "localhost"); }

std::map<std::string, std::string, std::less<>> fake_google::destination_settings(std::string_view provider,
                                                                                  std::string_view name) const {
  const std::string p = "OUTBOX_DEST__" + std::string(provider) + "__" + std::string(name) + "__";
  std::map<std::string, std::string, std::less<>> env{{p + "CONVERSION_ACTION_ID", "987654"},
                                                      {p + "CLIENT_ID", std::string(client_id)},
                                                      {p + "CLIENT_SECRET", std::string(client_secret)},
                                                      {p + "REFRESH_TOKEN", std::string(refresh_token)},
                                                      {p + "TOKEN_URL", token_url()},
                                                      {p + "BASE_URL", base_url()}};
  if (provider == "GOOGLE_ADS") env[p + "CUSTOMER_ID"] = "123-456-7890";
  else env[p + "ACCOUNT_ID"] = "1234567890";
  return env;
}

void fake_google::revoke_refresh_token() {
  const std::lock_guard lock{state_->mutex};
  state_->refresh_revoked = true;
}

void fake_google::expire_access_tokens() {
  const std::lock_guard lock{state_->mutex};
  for (auto& [token, expiry] : state_->tokens) expiry = clock::time_point{};
}

bool fake_google::token_is_valid(std::string_view access_token) const {
  const std::lock_guard lock{state_->mutex};
  const auto it = state_->tokens.find(access_token);
  return it != state_->tokens.end() && clock::now() < it->second;
}

int fake_google::refreshes() const {
  const std::lock_guard lock{state_->mutex};
  return static_cast<int>(state_->refresh_intervals.size());
}

int fake_google::max_concurrent_refreshes() const {
  const std::lock_guard lock{state_->mutex};
  int most = 0;
  for (const auto& [start, end] : state_->refresh_intervals) {
    // Requests whose answer was still pending when this one arrived (this one included).
    const auto overlapping =
        std::count_if(state_->refresh_intervals.begin(), state_->refresh_intervals.end(),
                      [&](const auto& other) { return other.first <= start && start < other.second; });
    most = std::max(most, static_cast<int>(std::max<std::ptrdiff_t>(overlapping, 1)));
  }
  return most;
}

int fake_google::unauthorized_answers() const {
  const std::lock_guard lock{state_->mutex};
  return state_->unauthorized;
}

namespace {

std::vector<recorded_request> requests_to(const test_https_server& server,
                                          const std::function<bool(std::string_view)>& match) {
  std::vector<recorded_request> out;
  for (auto& r : server.requests()) {
    if (match(std::string_view(r.target).substr(0, r.target.find('?')))) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<recorded_request> fake_google::token_requests() const {
  return requests_to(server_, [](std::string_view path) { return path == "/token"; });
}

void fake_google::fail_gclid(std::string gclid, std::string code, std::string message) {
  const std::lock_guard lock{state_->mutex};
  state_->gclid_failures[std::move(gclid)] = {std::move(code), std::move(message)};
}

void fake_google::mark_order_id_used(std::string conversion_action, std::string order_id) {
  const std::lock_guard lock{state_->mutex};
  state_->used_order_ids.emplace(std::move(conversion_action), std::move(order_id));
}

void fake_google::refuse_ads_uploads_not_allowlisted() {
  const std::lock_guard lock{state_->mutex};
  state_->ads_not_allowlisted = true;
}

std::vector<nlohmann::json> fake_google::uploaded_conversions() const {
  const std::lock_guard lock{state_->mutex};
  return state_->uploaded;
}

std::vector<recorded_request> fake_google::ads_requests() const {
  return requests_to(server_, [](std::string_view path) { return path.ends_with(":uploadClickConversions"); });
}

std::vector<nlohmann::json> fake_google::ingested_events() const {
  const std::lock_guard lock{state_->mutex};
  return state_->ingested;
}

std::vector<recorded_request> fake_google::data_manager_requests() const {
  return requests_to(server_, [](std::string_view path) { return path == "/v1/events:ingest"; });
}

std::vector<recorded_request> fake_google::status_requests() const {
  return requests_to(server_, [](std::string_view path) { return path == fake_request_statuses::path; });
}

fake_request_statuses& fake_google::statuses() { return *state_->statuses; }

}  // namespace outbox::test

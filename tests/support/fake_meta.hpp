#pragma once
// A responder for test_https_server that speaks Meta's Conversions API the way
// the real one answers (as far as its documentation and observed behaviour go):
//   POST /{api_version}/{pixel_id}/events, JSON body {"data": [...],
//   "access_token", "appsecret_proof"?, "test_event_code"?}
//   - 200 {"events_received": N, "messages": [], "fbtrace_id"} when every event is valid;
//   - all-or-nothing: one invalid event refuses the whole request with HTTP 400
//     and error code 100 naming the event's index (missing required fields,
//     unhashed em/ph, an event older than 7 days, or the configured poison
//     order id in custom_data.order_id);
//   - a wrong token: 400 with code 190 (OAuthException); no token: code 104;
//     a wrong or missing appsecret_proof (when an app secret is configured): code 100;
//   - an unknown pixel: code 100, subcode 33.
// Accepted events are recorded for assertions. Thread-safe: the responder runs
// on the server's thread, the accessors on the test's.
//
//   fake_meta meta;                       // defaults below
//   meta.install(server);                 // server.set_fallback(...)
//   env["OUTBOX_DEST__META__DEFAULT__BASE_URL"] = server.url("", "localhost");
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_https_server.hpp"

namespace outbox::test {

struct fake_meta_options {
  std::string api_version = "v27.0";
  std::string pixel_id = "1234567890";
  std::string access_token = "meta-good-token";
  std::string app_secret;                  // non-empty: appsecret_proof required and checked
  std::string poison_order_id = "poison";  // custom_data.order_id that Meta "rejects"
};

// One request as the fake understood it.
struct fake_meta_request {
  int status = 0;
  int error_code = 0;  // 0 when accepted
  std::vector<std::string> event_ids;
  std::string test_event_code;
  bool token_in_url = false;  // access_token found in the query string
};

class fake_meta {
 public:
  explicit fake_meta(fake_meta_options options = {});

  // The answer function, for server.set_fallback (scripted plans still come first).
  [[nodiscard]] responder make_responder() const;
  void install(test_https_server& server) const;

  // "/v27.0/1234567890/events"
  [[nodiscard]] std::string events_path() const;
  // From now on Meta accepts this token (and only this one).
  void set_access_token(std::string token);

  [[nodiscard]] std::vector<nlohmann::json> accepted_events() const;  // in arrival order
  [[nodiscard]] std::vector<std::string> accepted_event_ids() const;
  [[nodiscard]] std::size_t times_accepted(const std::string& event_id) const;
  [[nodiscard]] std::vector<fake_meta_request> requests() const;

 private:
  struct state;
  // Shared with the responder, which the server may hold longer than this object.
  std::shared_ptr<state> state_;
};

}  // namespace outbox::test

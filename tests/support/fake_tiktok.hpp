#pragma once
// A responder for test_https_server that speaks TikTok's Events API 2.0:
//   POST /open_api/v1.3/event/track/ with header Access-Token and JSON body
//   {"event_source", "event_source_id", "data": [...], "test_event_code"?}.
// Like the real API it answers HTTP 200 for errors too, with a non-zero "code":
//   - no Access-Token: 40104; a wrong one: 40105;
//   - bad envelope (event_source, event_source_id, data): 40002;
//   - an event missing event/event_time/event_id, or carrying the configured
//     poison order id in properties.order_id: 40002 for the whole request;
//   - an unhashed user.email/phone/external_id: 40062;
//   - otherwise {"code": 0, "message": "OK", "request_id", "data": {}}.
// Accepted events are recorded for assertions. Thread-safe.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_https_server.hpp"

namespace outbox::test {

struct fake_tiktok_options {
  std::string access_token = "tiktok-good-token";
  std::string event_source_id = "CRMEVENTSET1";
  std::string poison_order_id = "poison";
};

struct fake_tiktok_request {
  long long code = 0;  // the "code" answered
  std::vector<std::string> event_ids;
  std::string event_source;
  std::string test_event_code;
};

class fake_tiktok {
 public:
  explicit fake_tiktok(fake_tiktok_options options = {});

  [[nodiscard]] responder make_responder() const;
  void install(test_https_server& server) const;

  void set_access_token(std::string token);

  [[nodiscard]] std::vector<nlohmann::json> accepted_events() const;
  [[nodiscard]] std::vector<std::string> accepted_event_ids() const;
  [[nodiscard]] std::size_t times_accepted(const std::string& event_id) const;
  [[nodiscard]] std::vector<fake_tiktok_request> requests() const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace outbox::test

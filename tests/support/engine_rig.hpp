#pragma once
// An engine in virtual time: the in-memory store, a manual clock and a
// scripted HTTP transport, on one io_context the test drives. No server, no
// thread, no sleep: a test enqueues rows, moves time and reads what happened.
// What only PostgreSQL or a real TLS peer can show stays in the pgtests and e2e
// tests (engine_harness.hpp).
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/engine.hpp"
#include "dispatcher/ops/log.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/memory_store.hpp"

namespace outbox::test {

// One request as the transport saw it, with the virtual time it left.
struct sent_request {
  providers::http_request request;
  engine_clock::steady_time at;
};

// A provider's answer, scripted: a status and body after a virtual delay, or a transport failure.
struct scripted_answer {
  int status = 200;
  std::string body = "{}";
  providers::header_list headers;
  std::chrono::milliseconds after{0};
  providers::transport_error failure = providers::transport_error::none;

  static scripted_answer reply(int status, std::string body = "{}", providers::header_list headers = {}) {
    return {status, std::move(body), std::move(headers)};
  }
  static scripted_answer fail(providers::transport_error e) { return {0, "", {}, {}, e}; }
  scripted_answer& delayed(std::chrono::milliseconds d) {
    after = d;
    return *this;
  }
};

class scripted_http final : public providers::http_transport {
 public:
  explicit scripted_http(engine_clock& clock) : clock_(clock) {}
  // An answer chosen by the request (a token endpoint, a status endpoint), when it gives one;
  // otherwise answers in order, and once they run out, `fallback`.
  std::function<std::optional<scripted_answer>(const providers::http_request&)> route;
  std::deque<scripted_answer> script;
  scripted_answer fallback = scripted_answer::reply(200);
  std::vector<sent_request> sent;

  [[nodiscard]] boost::asio::awaitable<providers::http_result> async_send(providers::http_request req) override;

 private:
  engine_clock& clock_;
};

class engine_rig {
 public:
  // `tweak` may change the environment before the configuration is loaded.
  explicit engine_rig(std::function<void(environment&)> tweak = {});
  ~engine_rig();

  void start();
  // request_stop(), then time runs until async_run returned.
  void stop();
  [[nodiscard]] bool running() const { return running_; }

  // Enqueues as the CRM does; returns the row id (0 when the row existed already).
  std::int64_t enqueue(std::int64_t lead, const std::string& event = "Lead", const std::string& payload = "{}",
                       const std::string& destination = "default", const std::string& provider = "webhook");
  [[nodiscard]] const memory_row& row(std::int64_t id) { return store.row(id); }
  // Moves virtual time to each timer in turn until `done` holds or `limit` of virtual time passed.
  bool run_until(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(120));
  bool run_until_state(std::int64_t id, const std::string& state,
                       std::chrono::seconds limit = std::chrono::seconds(120)) {
    return run_until([&] { return store.row(id).state == state; }, limit);
  }
  [[nodiscard]] std::string logs() const { return log_text_.str(); }
  [[nodiscard]] outbox::metrics metrics() const { return engine_->metrics_snapshot(); }
  [[nodiscard]] engine& the_engine() { return *engine_; }

  // Declared before the io_context, so they outlive it: destroying it destroys
  // the coroutines still suspended (a request the shutdown abandoned), and
  // their timers leave the clock then.
  manual_clock clock{io};
  memory_store store{clock};
  scripted_http http{clock};
  config cfg;

 private:
  std::ostringstream log_text_;
  std::unique_ptr<logger> log_;

 public:
  boost::asio::io_context io;

 private:
  std::unique_ptr<engine> engine_;  // destroyed first, then the io_context
  bool running_ = false;
};

}  // namespace outbox::test

#include "tests/support/engine_rig.hpp"

#include <boost/asio/co_spawn.hpp>

#include "dispatcher/engine/clock_timer.hpp"
#include "tests/support/engine_settings.hpp"

namespace outbox::test {

namespace asio = boost::asio;

asio::awaitable<providers::http_result> scripted_http::async_send(providers::http_request req) {
  sent.push_back({req, clock_.steady_now()});
  scripted_answer answer = fallback;
  if (auto routed = route ? route(req) : std::nullopt) {
    answer = std::move(*routed);
  } else if (!script.empty()) {
    answer = script.front();
    script.pop_front();
  }
  if (answer.after > std::chrono::milliseconds::zero()) {
    clock_timer wait(co_await asio::this_coro::executor, clock_);
    wait.expires_after(answer.after);
    (void)co_await wait.async_wait();
  }
  providers::http_result result;
  result.duration = answer.after;
  if (answer.failure != providers::transport_error::none) {
    result.error = answer.failure;
    result.error_message = "scripted failure";
    result.maybe_delivered = answer.failure == providers::transport_error::timeout;
    co_return result;
  }
  result.response = providers::http_response{answer.status, answer.headers, answer.body};
  co_return result;
}

engine_rig::engine_rig(std::function<void(environment&)> tweak) {
  environment env;
  fast_engine_settings(env);
  env["OUTBOX_WAKE_MODE"] = "poll";
  env["OUTBOX_DEST__WEBHOOK__DEFAULT__URL"] = "https://hooks.test/hook";
  env["OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  if (tweak) tweak(env);
  cfg = load_config(env);
  log_ = std::make_unique<logger>(cfg.min_log_level, &log_text_);
}

engine_rig::~engine_rig() {
  if (running_) stop();
}

void engine_rig::start() {
  engine_ports ports;
  ports.store = &store;
  ports.clock = &clock;
  ports.http = &http;
  engine_ = std::make_unique<engine>(io.get_executor(), cfg, *log_, ports);
  running_ = true;
  asio::co_spawn(io, engine_->async_run(), [this](std::exception_ptr) { running_ = false; });
  clock.settle();
}

void engine_rig::stop() {
  engine_->request_stop();
  (void)run_until([&] { return !running_; }, std::chrono::seconds(60));
}

std::int64_t engine_rig::enqueue(std::int64_t lead, const std::string& event, const std::string& payload,
                                 const std::string& destination, const std::string& provider) {
  if (!store.enqueue(lead, provider, event, payload, destination)) return 0;
  return store.ids().back();  // ids grow with each insert
}

bool engine_rig::run_until(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto until = clock.steady_now() + limit;
  clock.settle();
  while (!done()) {
    if (clock.steady_now() >= until || !clock.advance_to_next()) return done();
  }
  return true;
}

}  // namespace outbox::test

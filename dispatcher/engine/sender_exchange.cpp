// The sender's exchange with one provider: build the request, add the OAuth
// token, send, judge the answer; one resend after refreshing a refused token.
#include "dispatcher/engine/sender.hpp"

#include "providers/http/http_outcome.hpp"

namespace outbox {
namespace {

using sys_clock = std::chrono::system_clock;
using steady = std::chrono::steady_clock;

}  // namespace

boost::asio::awaitable<sender::exchange> sender::async_exchange(destination& dest,
                                                                const std::vector<providers::outbound_event>& events) {
  exchange ex;
  // The settings this exchange started with, whatever the registry changes
  // while it runs: the request is built and judged by the same provider.
  const std::shared_ptr<const providers::provider> provider = dest.provider;
  const std::shared_ptr<providers::oauth_token_source> tokens = dest.tokens;
  // One retry after refreshing a token the API refused (401): tokens can be revoked early.
  for (int round = 0; round < 2; ++round) {
    const exchange_settings with{*provider, tokens.get()};
    const bool sent = co_await async_request(dest, with, events, ex);
    if (!sent) co_return ex;
    if (!ex.verdict.reauthenticate || !tokens || round == 1) break;
    rt_.log.info("access token refused; refreshing it and resending once",
                 {{"provider", dest.provider_kind}, {"destination", dest.name}});
    tokens->invalidate();
  }
  if (ex.verdict.reauthenticate && !ex.verdict.pause_destination) {
    ex.verdict.pause_destination = "the API refused a freshly refreshed access token (HTTP 401)";
  }
  co_return ex;
}

// One request and its verdict in `ex`; false when no request could be made
// (the request could not be built, or no token was to be had).
boost::asio::awaitable<bool> sender::async_request(const destination& dest, exchange_settings with,
                                                   const std::vector<providers::outbound_event>& events, exchange& ex) {
  providers::http_request request;
  ex.facts.started_at = rt_.clock.system_now();
  try {
    request = with.provider.build_request(events, ex.facts.started_at);
  } catch (const std::exception& e) {
    ex.verdict.events = every_event(events.size(), providers::outcome_kind::dead,
                                    std::string("could not build the request: ") + e.what());
    co_return false;
  }
  if (with.tokens != nullptr) {
    const auto token = co_await with.tokens->async_token(http_, rt_.clock.steady_now());
    if (!token.ok()) {
      ex.facts.response_excerpt = token.error;
      if (token.permanent) {
        ex.verdict.pause_destination = token.error;
      } else {
        ex.verdict.events = every_event(events.size(), providers::outcome_kind::retry, token.error);
      }
      co_return false;
    }
    request.headers.emplace_back("authorization", "Bearer " + token.access_token);
  }
  ex.facts.started_at = rt_.clock.system_now();
  const auto t0 = rt_.clock.steady_now();
  const metrics::destination_key key{dest.provider_kind, dest.name};
  ++rt_.metrics.requests[key];
  const auto result = co_await http_.async_send(std::move(request));
  ex.facts.duration = std::chrono::duration_cast<std::chrono::milliseconds>(rt_.clock.steady_now() - t0);
  if (result.resent_on_fresh_connection) {
    ++rt_.metrics.requests_resent[key];
    ex.facts.unanswered_first_try = result.first_try_duration;
    ex.facts.note =
        "the request was fully written on a pooled connection that then failed, and sent again on a "
        "fresh one: the provider may have received it twice (its dedup id covers that)";
  }
  rt_.metrics.request_seconds[key].observe(std::chrono::duration<double>(rt_.clock.steady_now() - t0).count());
  if (result.response) {
    ex.facts.http_status = result.response->status;
    ex.facts.response_excerpt = providers::response_excerpt(result.response->body);
  } else {
    ex.facts.http_status.reset();
    ex.facts.response_excerpt = std::string(providers::to_string(result.error)) + ": " + result.error_message;
  }
  try {
    ex.verdict = with.provider.classify(events, result, rt_.clock.system_now());
  } catch (const std::exception& e) {
    // A hostile or malformed response must never end the send task (the limiter
    // slot and the rows would be stuck): treat it as a transient failure.
    ex.verdict = {};
    ex.verdict.events = every_event(events.size(), providers::outcome_kind::retry,
                                    std::string("could not judge the response: ") + e.what());
  }
  co_return true;
}

}  // namespace outbox

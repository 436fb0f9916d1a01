#pragma once
// OAuth2 access tokens from a refresh token (Google's flow), cached until
// shortly before they expire and shared by every request of a destination:
// one refresh in flight at a time, concurrent callers wait for it.
#include <chrono>
#include <deque>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "providers/http/http_transport.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

struct token_result {
  std::string access_token;  // empty on failure
  std::string error;         // one line, never contains secrets
  bool permanent = false;    // invalid_grant / invalid_client: the destination needs new credentials
  [[nodiscard]] bool ok() const { return !access_token.empty(); }
};

// The token endpoint's answer, judged. Pure (unit-tested).
[[nodiscard]] token_result parse_token_response(const http_result& result, std::chrono::seconds* expires_in);
// application/x-www-form-urlencoded body of the refresh-token grant.
[[nodiscard]] std::string refresh_grant_body(const oauth_settings& settings);

class oauth_token_source {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds refresh_margin{60};  // refresh this long before expiry

  oauth_token_source(boost::asio::any_io_executor ex, oauth_settings settings);

  // The cached token while it is valid at `now` (the caller's clock: the
  // engine's), or a fresh one.
  [[nodiscard]] boost::asio::awaitable<token_result> async_token(http_transport& http, clock::time_point now);
  // Forget the cached token (the API answered 401 with it).
  void invalidate();
  [[nodiscard]] int refreshes() const noexcept { return refreshes_; }

 private:
  boost::asio::any_io_executor ex_;
  oauth_settings settings_;
  std::string token_;
  clock::time_point valid_until_{};
  bool refreshing_ = false;
  token_result last_failure_;
  std::deque<boost::asio::steady_timer*> waiters_;
  int refreshes_ = 0;
};

}  // namespace outbox::providers

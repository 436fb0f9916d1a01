#include "providers/google/oauth_token_source.hpp"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "providers/http/http_outcome.hpp"

namespace outbox::providers {
namespace {

std::string form_encode(std::string_view v) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string refresh_grant_body(const oauth_settings& s) {
  return "grant_type=refresh_token&client_id=" + form_encode(s.client_id) +
         "&client_secret=" + form_encode(s.client_secret) + "&refresh_token=" + form_encode(s.refresh_token);
}

token_result parse_token_response(const http_result& result, std::chrono::seconds* expires_in) {
  token_result out;
  if (!result.response) {
    out.error = "token endpoint unreachable: " + std::string(to_string(result.error)) + ": " + result.error_message;
    return out;
  }
  const auto& r = *result.response;
  const auto body = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status == 200 && body.is_object() && body.contains("access_token") && body["access_token"].is_string()) {
    out.access_token = body["access_token"].get<std::string>();
    if (expires_in) {
      // A hostile or odd token endpoint must not crash a send: numbers only, at least 1 s.
      const auto& e = body.contains("expires_in") ? body["expires_in"] : nlohmann::json();
      const double secs = e.is_number() ? e.get<double>() : 3600.0;
      *expires_in = std::chrono::seconds(static_cast<long long>(std::clamp(secs, 1.0, 24.0 * 3600)));
    }
    if (out.access_token.empty()) out.error = "token endpoint returned an empty access_token";
    return out;
  }
  const std::string code = body.is_object() && body.contains("error") && body["error"].is_string()
                               ? body["error"].get<std::string>()
                               : std::string();
  // invalid_grant: refresh token revoked or expired; invalid_client: wrong client id/secret.
  out.permanent = code == "invalid_grant" || code == "invalid_client" || code == "unauthorized_client";
  out.error = "token refresh failed: HTTP " + std::to_string(r.status) + (code.empty() ? "" : " " + code);
  if (body.is_object() && body.contains("error_description") && body["error_description"].is_string()) {
    out.error += ": " + one_line_excerpt(body["error_description"].get<std::string>());
  }
  return out;
}

oauth_token_source::oauth_token_source(boost::asio::any_io_executor ex, oauth_settings settings)
    : ex_(ex), settings_(std::move(settings)) {}

void oauth_token_source::invalidate() {
  token_.clear();
  valid_until_ = {};
}

boost::asio::awaitable<token_result> oauth_token_source::async_token(http_transport& http, clock::time_point now) {
  if (!token_.empty() && now < valid_until_) co_return token_result{token_, {}, false};
  if (refreshing_) {
    boost::asio::steady_timer wait(ex_, clock::time_point::max());
    waiters_.push_back(&wait);
    (void)co_await wait.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    if (!token_.empty()) co_return token_result{token_, {}, false};
    co_return last_failure_;
  }
  refreshing_ = true;
  ++refreshes_;
  http_request req;
  req.url = settings_.token_url;
  req.headers.emplace_back("content-type", "application/x-www-form-urlencoded");
  req.body = refresh_grant_body(settings_);
  const auto started = now;
  const auto result = co_await http.async_send(std::move(req));
  std::chrono::seconds expires_in{0};
  auto outcome = parse_token_response(result, &expires_in);
  if (outcome.ok()) {
    token_ = outcome.access_token;
    // Short-lived tokens (tests, odd servers) are refreshed at half-life instead.
    valid_until_ = started + expires_in - std::min(refresh_margin, expires_in / 2);
  } else {
    last_failure_ = outcome;
  }
  refreshing_ = false;
  while (!waiters_.empty()) {
    waiters_.front()->cancel();
    waiters_.pop_front();
  }
  co_return outcome;
}

}  // namespace outbox::providers

// OAuth2 refresh-token grant: the token endpoint's answers judged (pure), the
// form body, and the token source against a real local HTTPS token endpoint
// (tests/support/fake_google): one refresh shared by concurrent callers, caching
// until shortly before expiry, invalidate() forcing a refresh.
#include "providers/google/oauth_token_source.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "providers/http/https_client.hpp"
#include "tests/support/fake_google.hpp"
#include "tests/support/run_async.hpp"
#include "tests/support/test_tls.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace oauth_token_source_test {

using namespace outbox::providers;
using namespace std::chrono_literals;
using outbox::test::fake_google;
using outbox::test::fake_google_options;

namespace {

http_result reply(int status, std::string body) {
  http_result r;
  r.response = http_response{status, {{"content-type", "application/json"}}, std::move(body)};
  return r;
}

// Splits "a=1&b=2" into pairs, undoing %XX (the body only uses %XX, never '+').
std::vector<std::pair<std::string, std::string>> form_fields(std::string_view body) {
  const auto decode = [](std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  std::vector<std::pair<std::string, std::string>> fields;
  while (!body.empty()) {
    const auto amp = body.find('&');
    const auto pair = body.substr(0, amp);
    const auto eq = pair.find('=');
    fields.emplace_back(decode(pair.substr(0, eq)), eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    body.remove_prefix(amp + 1);
  }
  return fields;
}

const outbox::test::test_pki& pki() {
  static const outbox::test::test_pki instance;
  return instance;
}

https_client_options client_options() {
  https_client_options o;
  o.extra_ca_file = pki().trusted.cert_pem_file().string();
  o.connect_timeout = 2s;
  o.handshake_timeout = 2s;
  o.request_timeout = 3s;
  return o;
}

// One caller of the token source; everything it touches outlives it (the test waits for `done`).
boost::asio::awaitable<void> async_fetch(oauth_token_source* source, https_client* http, token_result* out, int* done) {
  *out = co_await source->async_token(*http, std::chrono::steady_clock::now());
  ++*done;
}

// Starts `n` callers at once and waits until all have their answer.
boost::asio::awaitable<std::vector<token_result>> async_fetch_concurrently(boost::asio::any_io_executor ex,
                                                                           oauth_token_source& source,
                                                                           https_client& http, std::size_t n) {
  std::vector<token_result> got(n);
  int done = 0;
  for (std::size_t i = 0; i < n; ++i) {
    boost::asio::co_spawn(ex, async_fetch(&source, &http, &got[i], &done), boost::asio::detached);
  }
  boost::asio::steady_timer wait(ex);
  while (done < static_cast<int>(n)) {
    wait.expires_after(std::chrono::milliseconds(10));
    co_await wait.async_wait(boost::asio::use_awaitable);
  }
  co_return got;
}

oauth_settings settings_for(const fake_google& g) {
  oauth_settings s;
  s.token_url = g.token_url();
  s.client_id = fake_google::client_id;
  s.client_secret = fake_google::client_secret;
  s.refresh_token = fake_google::refresh_token;
  return s;
}

}  // namespace

TEST_CASE("parse_token_response: the token endpoint's answers") {
  std::chrono::seconds expires{0};

  SUBCASE("a token with its lifetime") {
    const auto r = parse_token_response(
        reply(200, R"({"access_token":"ya29.abc","expires_in":3599,"token_type":"Bearer","scope":"x"})"), &expires);
    CHECK(r.ok());
    CHECK(r.access_token == "ya29.abc");
    CHECK(r.error.empty());
    CHECK_FALSE(r.permanent);
    CHECK(expires == 3599s);
  }
  SUBCASE("no expires_in: one hour assumed") {
    const auto r = parse_token_response(reply(200, R"({"access_token":"t"})"), &expires);
    CHECK(r.ok());
    CHECK(expires == 3600s);
  }
  SUBCASE("a non-numeric or absurd expires_in never throws") {
    CHECK(parse_token_response(reply(200, R"({"access_token":"t","expires_in":"soon"})"), &expires).ok());
    CHECK(expires == 3600s);
    CHECK(parse_token_response(reply(200, R"({"access_token":"t","expires_in":-5})"), &expires).ok());
    CHECK(expires == 1s);
    CHECK(parse_token_response(reply(200, R"({"access_token":"t","expires_in":1e30})"), &expires).ok());
    CHECK(expires == 86400s);
  }
  SUBCASE("a null lifetime pointer is allowed") {
    CHECK(parse_token_response(reply(200, R"({"access_token":"t","expires_in":10})"), nullptr).ok());
  }
  SUBCASE("an empty access_token is a failure") {
    const auto r = parse_token_response(reply(200, R"({"access_token":"","expires_in":10})"), &expires);
    CHECK_FALSE(r.ok());
    CHECK(r.error.find("empty access_token") != std::string::npos);
    CHECK_FALSE(r.permanent);
  }
  SUBCASE("200 without a token, or not JSON, is a transient failure") {
    for (const char* body : {R"({"token":"x"})", "<html>oops</html>", R"({"access_token":42})", ""}) {
      CAPTURE(body);
      const auto r = parse_token_response(reply(200, body), &expires);
      CHECK_FALSE(r.ok());
      CHECK_FALSE(r.permanent);
      CHECK(r.error.find("HTTP 200") != std::string::npos);
    }
  }
  SUBCASE("invalid_grant (revoked or expired refresh token) is permanent, with Google's description") {
    const auto r = parse_token_response(
        reply(400, R"({"error":"invalid_grant","error_description":"Token has been expired or revoked."})"), &expires);
    CHECK_FALSE(r.ok());
    CHECK(r.permanent);
    CHECK(r.error == "token refresh failed: HTTP 400 invalid_grant: Token has been expired or revoked.");
  }
  SUBCASE("invalid_client and unauthorized_client are permanent too") {
    CHECK(parse_token_response(reply(401, R"({"error":"invalid_client"})"), &expires).permanent);
    CHECK(parse_token_response(reply(400, R"({"error":"unauthorized_client"})"), &expires).permanent);
  }
  SUBCASE("other errors and 5xx are transient") {
    CHECK_FALSE(parse_token_response(reply(400, R"({"error":"invalid_request"})"), &expires).permanent);
    CHECK_FALSE(parse_token_response(reply(500, "backend error"), &expires).permanent);
    CHECK_FALSE(parse_token_response(reply(503, R"({"error":"temporarily_unavailable"})"), &expires).permanent);
    CHECK(parse_token_response(reply(503, "x"), &expires).error.find("HTTP 503") != std::string::npos);
  }
  SUBCASE("a transport failure is transient and names the failure") {
    http_result r;
    r.error = transport_error::connect;
    r.error_message = "connection refused";
    const auto t = parse_token_response(r, &expires);
    CHECK_FALSE(t.ok());
    CHECK_FALSE(t.permanent);
    CHECK(t.error.find("unreachable") != std::string::npos);
    CHECK(t.error.find("connection refused") != std::string::npos);
  }
  SUBCASE("the error text is one line and never quotes the refresh token") {
    const auto r = parse_token_response(
        reply(400, "{\"error\":\"invalid_grant\",\"error_description\":\"line one\\nline two\"}"), &expires);
    CHECK(r.error.find('\n') == std::string::npos);
  }
}

TEST_CASE("refresh_grant_body: form-encoded refresh-token grant") {
  oauth_settings s;
  s.client_id = "123-abc.apps.googleusercontent.com";
  s.client_secret = "GOCSPX-a/b+c=d&e";
  s.refresh_token = "1//0g refresh~token";
  const std::string body = refresh_grant_body(s);
  CHECK(body ==
        "grant_type=refresh_token&client_id=123-abc.apps.googleusercontent.com"
        "&client_secret=GOCSPX-a%2Fb%2Bc%3Dd%26e&refresh_token=1%2F%2F0g%20refresh~token");
  const auto fields = form_fields(body);
  REQUIRE(fields.size() == 4);
  CHECK(fields[0] == std::pair<std::string, std::string>{"grant_type", "refresh_token"});
  CHECK(fields[1].second == s.client_id);
  CHECK(fields[2].second == s.client_secret);
  CHECK(fields[3].second == s.refresh_token);
  // Non-ASCII bytes are percent-encoded byte by byte.
  s.client_secret = "\xC3\xA9";
  CHECK(refresh_grant_body(s).find("client_secret=%C3%A9&") != std::string::npos);
}

TEST_CASE("oauth_token_source: concurrent callers share one refresh, and the token is cached") {
  fake_google_options opts;
  opts.token_lifetime = 3600s;
  opts.token_delay = 150ms;  // long enough for every caller to arrive while the refresh runs
  fake_google google(pki().trusted, opts);

  const auto tokens = outbox::test::run_async([&](auto ex) -> boost::asio::awaitable<std::vector<std::string>> {
    https_client http(ex, client_options());
    oauth_token_source source(ex, settings_for(google));
    const auto results = co_await async_fetch_concurrently(ex, source, http, 8);
    std::vector<std::string> got;
    for (const auto& t : results) got.push_back(t.ok() ? t.access_token : "failed: " + t.error);
    CHECK(source.refreshes() == 1);
    // Cached: later calls need no request.
    const auto again = co_await source.async_token(http, std::chrono::steady_clock::now());
    CHECK(again.access_token == got.front());
    CHECK(source.refreshes() == 1);
    co_return got;
  });
  CHECK(google.refreshes() == 1);
  for (const auto& t : tokens) CHECK(t == tokens.front());
  CHECK(tokens.front().starts_with("ya29.fake-"));
  const auto reqs = google.token_requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs.front().header("content-type") == "application/x-www-form-urlencoded");
  CHECK(reqs.front().body.find("grant_type=refresh_token") == 0);
}

TEST_CASE("oauth_token_source: a short-lived token is refreshed before it expires; invalidate forces a refresh") {
  fake_google_options opts;
  opts.token_lifetime = 2s;  // refreshed at half-life: after about 1 s
  fake_google google(pki().trusted, opts);

  outbox::test::run_async([&](auto ex) -> boost::asio::awaitable<void> {
    https_client http(ex, client_options());
    oauth_token_source source(ex, settings_for(google));
    const auto first = co_await source.async_token(http, std::chrono::steady_clock::now());
    REQUIRE(first.ok());
    const auto cached = co_await source.async_token(http, std::chrono::steady_clock::now());
    CHECK(cached.access_token == first.access_token);
    CHECK(source.refreshes() == 1);

    boost::asio::steady_timer wait(ex, 1200ms);
    co_await wait.async_wait(boost::asio::use_awaitable);
    const auto second = co_await source.async_token(http, std::chrono::steady_clock::now());
    REQUIRE(second.ok());
    CHECK(second.access_token != first.access_token);
    CHECK(source.refreshes() == 2);
    CHECK(google.token_is_valid(second.access_token));

    source.invalidate();
    const auto third = co_await source.async_token(http, std::chrono::steady_clock::now());
    REQUIRE(third.ok());
    CHECK(third.access_token != second.access_token);
    CHECK(source.refreshes() == 3);
  });
  CHECK(google.refreshes() == 3);
  CHECK(google.max_concurrent_refreshes() == 1);
}

TEST_CASE("oauth_token_source: invalid_grant is permanent and reaches every waiting caller") {
  fake_google_options opts;
  opts.token_delay = 100ms;
  fake_google google(pki().trusted, opts);
  google.revoke_refresh_token();

  outbox::test::run_async([&](auto ex) -> boost::asio::awaitable<void> {
    https_client http(ex, client_options());
    oauth_token_source source(ex, settings_for(google));
    const auto got = co_await async_fetch_concurrently(ex, source, http, 3);
    REQUIRE(got.size() == 3);
    for (const auto& t : got) {
      CHECK_FALSE(t.ok());
      CHECK(t.permanent);
      CHECK(t.error.find("invalid_grant") != std::string::npos);
      CHECK(t.error.find(fake_google::refresh_token) == std::string::npos);
    }
    CHECK(source.refreshes() == 1);
  });
  CHECK(google.refreshes() == 1);
}

TEST_CASE("oauth_token_source: a wrong client secret is invalid_client, permanent") {
  fake_google google(pki().trusted);
  outbox::test::run_async([&](auto ex) -> boost::asio::awaitable<void> {
    https_client http(ex, client_options());
    auto s = settings_for(google);
    s.client_secret = "wrong";
    oauth_token_source source(ex, s);
    const auto t = co_await source.async_token(http, std::chrono::steady_clock::now());
    CHECK_FALSE(t.ok());
    CHECK(t.permanent);
    CHECK(t.error.find("invalid_client") != std::string::npos);
  });
}

TEST_CASE("oauth_token_source: an unreachable token endpoint is a transient failure, retried on the next call") {
  fake_google google(pki().trusted);
  outbox::test::run_async([&](auto ex) -> boost::asio::awaitable<void> {
    https_client http(ex, client_options());
    auto s = settings_for(google);
    s.token_url = "https://127.0.0.1:1/token";
    oauth_token_source source(ex, s);
    const auto t = co_await source.async_token(http, std::chrono::steady_clock::now());
    CHECK_FALSE(t.ok());
    CHECK_FALSE(t.permanent);
    const auto again = co_await source.async_token(http, std::chrono::steady_clock::now());
    CHECK_FALSE(again.ok());
    CHECK(source.refreshes() == 2);  // failures are not cached
  });
}

}  // namespace oauth_token_source_test

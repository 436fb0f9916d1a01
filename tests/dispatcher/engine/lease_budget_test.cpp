// The lease must cover the worst-case attempt: arithmetic, and the config rule built on it.
#include "dispatcher/engine/lease_budget.hpp"

#include <doctest/doctest.h>

#include "dispatcher/config/config.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace lease_budget_test {

using namespace std::chrono_literals;
using outbox::environment;

namespace {

std::vector<std::string> problems_of(const environment& env) {
  try {
    (void)outbox::load_config(env);
  } catch (const outbox::config_error& e) {
    return e.problems();
  }
  return {};
}

const environment google_ads{{"OUTBOX_DEST__GOOGLE_ADS__ADS__CUSTOMER_ID", "123-456-7890"},
                             {"OUTBOX_DEST__GOOGLE_ADS__ADS__CONVERSION_ACTION_ID", "987"},
                             {"OUTBOX_DEST__GOOGLE_ADS__ADS__CLIENT_ID", "cid"},
                             {"OUTBOX_DEST__GOOGLE_ADS__ADS__CLIENT_SECRET", "csecret"},
                             {"OUTBOX_DEST__GOOGLE_ADS__ADS__REFRESH_TOKEN", "rtoken"}};

environment with(environment env, std::initializer_list<std::pair<const std::string, std::string>> more) {
  for (const auto& [k, v] : more) env.insert_or_assign(k, v);
  return env;
}

}  // namespace

TEST_CASE("worst_case_attempt: two tries of connect + handshake + request, plus a token fetch with OAuth") {
  CHECK(outbox::worst_case_attempt(3000ms, 3000ms, 10000ms, false) == 32000ms);  // 2 x (3 + 3 + 10)
  CHECK(outbox::worst_case_attempt(3000ms, 3000ms, 10000ms, true) == 48000ms);   // + (3 + 3 + 10)
  CHECK(outbox::worst_case_attempt(1000ms, 2000ms, 500ms, false) == 7000ms);
  CHECK(outbox::worst_case_attempt(100ms, 100ms, 100ms, true) == 900ms);
  CHECK(outbox::minimum_lease(32000ms, 5s) == 37s);
  CHECK(outbox::minimum_lease(32001ms, 5s) == 38s);  // rounded up, never down
  CHECK(outbox::minimum_lease(0ms, 5s) == 5s);
}

TEST_CASE("the default lease covers the default timeouts, OAuth destinations included") {
  const auto plain = outbox::load_config({});
  CHECK(plain.lease == 60s);
  CHECK(plain.lease >= outbox::minimum_lease(outbox::worst_case_attempt(plain.connect_timeout, plain.connect_timeout,
                                                                        plain.request_timeout, true),
                                             outbox::lease_margin));
  CHECK(outbox::load_config(google_ads).lease == 60s);
}

TEST_CASE("a lease shorter than the worst-case attempt plus the margin is a config error naming the minimum") {
  // Defaults (connect 3 s, request 10 s): 32 s + 5 s = 37 s without OAuth.
  const auto short_lease = problems_of({{"OUTBOX_LEASE_SECONDS", "36"}});
  REQUIRE(short_lease.size() == 1);
  CHECK(short_lease[0].starts_with("OUTBOX_LEASE_SECONDS: must be at least 37 s (got 36 s)"));
  CHECK(short_lease[0].find("32000 ms") != std::string::npos);
  CHECK(short_lease[0].find("OAuth") == std::string::npos);
  CHECK(problems_of({{"OUTBOX_LEASE_SECONDS", "37"}}).empty());

  // An OAuth destination adds a token fetch: 48 s + 5 s = 53 s.
  const auto oauth = problems_of(with(google_ads, {{"OUTBOX_LEASE_SECONDS", "52"}}));
  REQUIRE(oauth.size() == 1);
  CHECK(oauth[0].starts_with("OUTBOX_LEASE_SECONDS: must be at least 53 s (got 52 s)"));
  CHECK(oauth[0].find("OAuth token fetch for google_ads/ads") != std::string::npos);
  CHECK(problems_of(with(google_ads, {{"OUTBOX_LEASE_SECONDS", "53"}})).empty());

  // Longer timeouts need a longer lease: 2 x (1 + 1 + 20) + 5 = 49 s.
  const auto slow = problems_of(
      {{"OUTBOX_REQUEST_TIMEOUT_MS", "20000"}, {"OUTBOX_CONNECT_TIMEOUT_MS", "1000"}, {"OUTBOX_LEASE_SECONDS", "48"}});
  REQUIRE(slow.size() == 1);
  CHECK(slow[0].find("at least 49 s") != std::string::npos);

  // An invalid timeout is reported once, without a lease problem computed from the default.
  const auto bad = problems_of({{"OUTBOX_REQUEST_TIMEOUT_MS", "soon"}, {"OUTBOX_LEASE_SECONDS", "10"}});
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].starts_with("OUTBOX_REQUEST_TIMEOUT_MS:"));
}

}  // namespace lease_budget_test

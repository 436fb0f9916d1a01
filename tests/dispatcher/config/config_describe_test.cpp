// `dispatcher config` masks secrets in URLs: userinfo, query values, fragments
// and secret-looking path segments (Slack-style hooks carry the secret in the path).
#include "dispatcher/config/config_describe.hpp"

#include <doctest/doctest.h>

#include "dispatcher/config/config.hpp"
#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace config_describe_test {

using outbox::mask_url_secrets;

namespace {

constexpr const char* slack_hook = "https://hooks.example.com/services/T000/B000/XXXXSECRET?sig=abc&token=xyz";
constexpr const char* slack_real = "https://hooks.slack.com/services/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";

}  // namespace

TEST_CASE("mask_url_secrets masks every query value and the userinfo, keeps scheme, host, port and path") {
  CHECK(mask_url_secrets(slack_hook) == "https://hooks.example.com/services/T000/B000/***?sig=***&token=***");
  CHECK(mask_url_secrets("https://example.com/hook") == "https://example.com/hook");
  CHECK(mask_url_secrets("https://example.com:8443/a/b?x=1&y=&z") == "https://example.com:8443/a/b?x=***&y=&z");
  CHECK(mask_url_secrets("https://user:pa55@example.com/in") == "https://***@example.com/in");
  CHECK(mask_url_secrets("https://tok3nOnly@[::1]:9000/in") == "https://***@[::1]:9000/in");
  CHECK(mask_url_secrets("https://example.com/cb#access_token=abc") == "https://example.com/cb#***");
  CHECK(mask_url_secrets("https://example.com?code=4/0Ad") == "https://example.com?code=***");
  CHECK(mask_url_secrets("http://localhost:1234/") == "http://localhost:1234/");
}

TEST_CASE("mask_url_secrets masks path segments that look like secrets, and only those") {
  // A generated token: 16+ characters mixing letters and digits.
  CHECK(mask_url_secrets(slack_real) == "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/***");
  CHECK(mask_url_secrets("https://discord.com/api/webhooks/123456789012345678/AbCdEfGh1234567890xyz") ==
        "https://discord.com/api/webhooks/123456789012345678/***");  // the id, digits only, is no secret
  CHECK(mask_url_secrets("https://webhook.site/0b5c9a3e-7d21-4f7a-9c1e-3f0a6b2d8e41") == "https://webhook.site/***");
  // A long unbroken run of letters, digits or not.
  CHECK(mask_url_secrets("https://x.example/in/" + std::string(32, 'Q')) == "https://x.example/in/***");
  // Segments that name themselves secret, except the bare word (an endpoint name).
  CHECK(mask_url_secrets("https://x.example/hook/mysecretvalue") == "https://x.example/hook/***");
  CHECK(mask_url_secrets("https://x.example/k/api_key_42") == "https://x.example/k/***");
  CHECK(mask_url_secrets("https://oauth2.googleapis.com/token") == "https://oauth2.googleapis.com/token");
  CHECK(mask_url_secrets("https://x.example/v1/tokens") == "https://x.example/v1/tokens");
  // Ordinary paths stay readable.
  CHECK(mask_url_secrets("https://crm.example.com/api/v2/lead-events/in") ==
        "https://crm.example.com/api/v2/lead-events/in");
  CHECK(mask_url_secrets("https://googleads.googleapis.com/v26/customers/1234567890:uploadClickConversions") ==
        "https://googleads.googleapis.com/v26/customers/1234567890:uploadClickConversions");
}

TEST_CASE("mask_url_secrets leaves text that is not a URL to redact_url") {
  CHECK(mask_url_secrets("host=db password=pw dbname=x") == "host=db password=*** dbname=x");
  CHECK(mask_url_secrets("1234567890") == "1234567890");
  CHECK(mask_url_secrets("") == "");
}

TEST_CASE("describe() shows secret-bearing webhook URLs masked") {
  const auto cfg =
      outbox::load_config({{"OUTBOX_DEST__WEBHOOK__SLACK__URL", slack_hook},
                           {"OUTBOX_DEST__WEBHOOK__REAL__URL", slack_real},
                           {"OUTBOX_DEST__WEBHOOK__REAL__HEADER__X_CALLBACK", "https://u:p4ss@cb.example/x"}});
  const std::string text = outbox::describe(cfg);
  for (const char* secret : {"XXXXSECRET", "abc", "xyz", "a1B2c3D4e5F6g7H8i9J0k1L2", "p4ss"}) {
    CAPTURE(secret);
    CHECK(text.find(secret) == std::string::npos);
  }
  CHECK(text.find(
            "OUTBOX_DEST__WEBHOOK__SLACK__URL=https://hooks.example.com/services/T000/B000/***?sig=***&token=***\n") !=
        std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__REAL__HEADER__X_CALLBACK=https://***@cb.example/x\n") != std::string::npos);
}

TEST_CASE("dispatcher config never prints the secrets of a webhook URL") {
  const auto r = outbox::test::run_cli({"config"}, {{"OUTBOX_DEST__WEBHOOK__SLACK__URL", slack_hook},
                                                    {"OUTBOX_DEST__WEBHOOK__REAL__URL", slack_real},
                                                    {"OUTBOX_METRICS_ADDRESS", ""}});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("OUTBOX_DEST__WEBHOOK__SLACK__URL=https://hooks.example.com/services/T000/B000/***?") !=
        std::string::npos);
  for (const char* secret : {"XXXXSECRET", "sig=abc", "token=xyz", "a1B2c3D4e5F6g7H8i9J0k1L2"}) {
    CAPTURE(secret);
    CHECK(r.output.find(secret) == std::string::npos);
  }
}

}  // namespace config_describe_test

#include "dispatcher/config/config.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace config_test {

using namespace outbox;
using namespace std::chrono_literals;

namespace {

// A temporary file removed at scope exit.
class temp_file {
 public:
  explicit temp_file(const std::string& content) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("outbox_config_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".json");
    std::ofstream{path_} << content;
  }
  ~temp_file() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

const environment webhook_env{{"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://example.com/hook"}};

environment with(environment env, std::initializer_list<std::pair<const std::string, std::string>> more) {
  for (const auto& [k, v] : more) env.insert_or_assign(k, v);
  return env;
}

// The problems of a configuration that must fail.
std::vector<std::string> problems_of(const environment& env) {
  try {
    (void)load_config(env);
  } catch (const config_error& e) {
    return e.problems();
  }
  FAIL("expected a config_error");
  return {};
}

std::string error_text_of(const environment& env) {
  try {
    (void)load_config(env);
  } catch (const config_error& e) {
    return e.what();
  }
  FAIL("expected a config_error");
  return {};
}

bool any_starts_with(const std::vector<std::string>& problems, std::string_view prefix) {
  for (const auto& p : problems) {
    if (p.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("defaults from an empty environment") {
  const config c = load_config({});
  CHECK(c.database_url.empty());
  CHECK_FALSE(c.instance_name.has_value());
  CHECK(c.wake == wake_mode::listen);
  CHECK(c.notify_channel == "outbox_event_delivery");
  CHECK(c.poll_interval == 2000ms);
  CHECK(c.claim_batch == 100);
  CHECK(c.max_in_flight == 256);
  CHECK(c.lease == 60s);
  CHECK(c.request_timeout == 10000ms);
  CHECK(c.connect_timeout == 3000ms);
  CHECK(c.sweep_interval == 15s);
  CHECK(c.shutdown_grace == 10s);
  CHECK(c.listen_heartbeat == 10s);
  CHECK(c.backoff.base == 2s);
  CHECK(c.backoff.cap == 3600s);
  CHECK(c.backoff.max_attempts == 12);
  CHECK(c.backoff.retry_horizon == 36h);
  CHECK(c.extra_ca_file.empty());
  CHECK(c.max_payload_bytes == 262144);
  CHECK(c.min_log_level == log_level::info);
  CHECK(c.metrics_address == std::optional<std::string>{"127.0.0.1:9464"});
  CHECK(c.destinations.empty());
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("no destinations") != std::string::npos);
}

TEST_CASE("every global setting is read from the environment") {
  const temp_file ca{"-----BEGIN CERTIFICATE-----\n"};
  const config c = load_config(with(webhook_env, {
                                                     {"DATABASE_URL", "postgresql://app@db/crm"},
                                                     {"OUTBOX_INSTANCE_NAME", "worker-1"},
                                                     {"OUTBOX_WAKE_MODE", "POLL"},
                                                     {"OUTBOX_POLL_INTERVAL_MS", "500"},
                                                     {"OUTBOX_CLAIM_BATCH", "50"},
                                                     {"OUTBOX_MAX_IN_FLIGHT", "64"},
                                                     {"OUTBOX_LEASE_SECONDS", "60"},
                                                     {"OUTBOX_REQUEST_TIMEOUT_MS", "20000"},
                                                     {"OUTBOX_CONNECT_TIMEOUT_MS", "1000"},
                                                     {"OUTBOX_SWEEP_INTERVAL_SECONDS", "5"},
                                                     {"OUTBOX_SHUTDOWN_GRACE_SECONDS", "0"},
                                                     {"OUTBOX_LISTEN_HEARTBEAT_SECONDS", "3"},
                                                     {"OUTBOX_BACKOFF_BASE_SECONDS", "5"},
                                                     {"OUTBOX_BACKOFF_CAP_SECONDS", "600"},
                                                     {"OUTBOX_MAX_ATTEMPTS", "20"},
                                                     {"OUTBOX_RETRY_HORIZON_HOURS", "24"},
                                                     {"OUTBOX_EXTRA_CA_FILE", ca.path()},
                                                     {"OUTBOX_MAX_PAYLOAD_BYTES", "1024"},
                                                     {"OUTBOX_LOG_LEVEL", "debug"},
                                                     {"OUTBOX_METRICS_ADDRESS", "[::1]:9000"},
                                                 }));
  CHECK(c.database_url == "postgresql://app@db/crm");
  CHECK(c.instance_name == std::optional<std::string>{"worker-1"});
  CHECK(c.wake == wake_mode::poll);
  CHECK(c.poll_interval == 500ms);
  CHECK(c.claim_batch == 50);
  CHECK(c.max_in_flight == 64);
  CHECK(c.lease == 60s);
  CHECK(c.request_timeout == 20000ms);
  CHECK(c.connect_timeout == 1000ms);
  CHECK(c.sweep_interval == 5s);
  CHECK(c.shutdown_grace == 0s);
  CHECK(c.listen_heartbeat == 3s);
  CHECK(c.backoff.base == 5s);
  CHECK(c.backoff.cap == 600s);
  CHECK(c.backoff.max_attempts == 20);
  CHECK(c.backoff.retry_horizon == 24h);
  CHECK(c.extra_ca_file == ca.path());
  CHECK(c.max_payload_bytes == 1024);
  CHECK(c.min_log_level == log_level::debug);
  CHECK(c.metrics_address == std::optional<std::string>{"[::1]:9000"});
  CHECK(c.warnings.empty());
}

TEST_CASE("empty values mean the default for numbers and disable metrics") {
  const config c = load_config(with(webhook_env, {{"OUTBOX_CLAIM_BATCH", ""},
                                                  {"OUTBOX_LOG_LEVEL", ""},
                                                  {"OUTBOX_WAKE_MODE", ""},
                                                  {"OUTBOX_METRICS_ADDRESS", ""}}));
  CHECK(c.claim_batch == 100);
  CHECK(c.min_log_level == log_level::info);
  CHECK(c.wake == wake_mode::listen);
  CHECK_FALSE(c.metrics_address.has_value());
}

TEST_CASE("a webhook destination from the environment") {
  const config c = load_config({{"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://example.com/hook"},
                                {"OUTBOX_DEST__WebHook__Default__Secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", "4"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__RATE_PER_SECOND", "2.5"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__PAUSED", "yes"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_FOO", "bar"},
                                {"OUTBOX_DEST__WEBHOOK__EU_HOOK__URL", "http://eu.example.com/h"},
                                {"OUTBOX_DEST__WEBHOOK__EU_HOOK__BURST", "7"}});
  REQUIRE(c.destinations.size() == 2);
  const destination_config* d = c.find_destination("webhook", "default");
  REQUIRE(d != nullptr);
  CHECK(d->provider == "webhook");
  CHECK(d->name == "default");
  CHECK(d->setting("url") == "https://example.com/hook");
  CHECK(d->setting("secret") == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  CHECK(d->setting("missing").empty());
  CHECK(d->concurrency == 4);
  CHECK(d->rate_per_second == doctest::Approx(2.5));
  CHECK(d->burst == 3);  // ceil(rate) when not given
  CHECK(d->paused);
  CHECK(d->extra_headers == providers::header_list{{"x-foo", "bar"}});

  const destination_config* eu = c.find_destination("webhook", "eu_hook");
  REQUIRE(eu != nullptr);
  CHECK(eu->concurrency == 16);
  CHECK(eu->rate_per_second == 0);
  CHECK(eu->burst == 7);
  CHECK_FALSE(eu->paused);
  CHECK(c.find_destination("webhook", "nope") == nullptr);
  CHECK(c.destinations[0].name == "default");  // sorted
}

TEST_CASE("the JSON file, with the environment winning") {
  const temp_file file{R"({
    // comments are allowed
    "claim_batch": 50,
    "poll_interval_ms": "500",
    "log_level": "warn",
    "database_url": "postgresql://file@db/crm",
    "OUTBOX_MAX_ATTEMPTS": 5,
    "metrics_address": null,
    "destinations": {
      "webhook": {
        "Default": {"url": "https://file.example.com/hook", "concurrency": 8, "paused": true,
                    "headers": {"X-Team": "crm"}},
        "other": {"url": "https://other.example.com/"}
      }
    }
  })"};
  const config c = load_config({{"OUTBOX_CONFIG_FILE", file.path()},
                                {"OUTBOX_CLAIM_BATCH", "70"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://env.example.com/hook"}});
  CHECK(c.claim_batch == 70);       // env wins
  CHECK(c.poll_interval == 500ms);  // file only
  CHECK(c.min_log_level == log_level::warn);
  CHECK(c.database_url == "postgresql://file@db/crm");
  CHECK(c.backoff.max_attempts == 5);                                        // variable-style key works in the file too
  CHECK(c.metrics_address == std::optional<std::string>{"127.0.0.1:9464"});  // null = unset
  const destination_config* d = c.find_destination("webhook", "default");
  REQUIRE(d != nullptr);
  CHECK(d->setting("url") == "https://env.example.com/hook");
  CHECK(d->concurrency == 8);
  CHECK(d->paused);
  CHECK(d->extra_headers == providers::header_list{{"x-team", "crm"}});
  CHECK(c.find_destination("webhook", "other") != nullptr);
}

TEST_CASE("every problem is reported at once, each naming its setting") {
  const auto problems = problems_of({
      {"OUTBOX_CLAIM_BATCH", "0"},
      {"OUTBOX_POLL_INTERVAL_MS", "fast"},
      {"OUTBOX_WAKE_MODE", "push"},
      {"OUTBOX_LOG_LEVEL", "verbose"},
      {"OUTBOX_MAX_IN_FLIGHT", "-1"},
      {"OUTBOX_NOTIFY_CHANNEL", "Bad-Channel"},
      {"OUTBOX_METRICS_ADDRESS", "localhost"},
      {"OUTBOX_EXTRA_CA_FILE", "/nonexistent/ca.pem"},
      {"OUTBOX_INSTANCE_NAME", "has space"},
      {"OUTBOX_BACKOFF_BASE_SECONDS", "60"},
      {"OUTBOX_BACKOFF_CAP_SECONDS", "30"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "ftp://example.com"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", "0"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__RATE_PER_SECOND", "-1"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__PAUSED", "maybe"},
      {"OUTBOX_CLAIM_SYNCHRONOUS_COMMIT", "maybe"},
  });
  CHECK(problems.size() == 16 - 1);  // base+cap give one problem between them
  CHECK(any_starts_with(problems, "OUTBOX_CLAIM_BATCH: must be a whole number from 1 to 1000 (got \"0\")"));
  CHECK(any_starts_with(problems, "OUTBOX_POLL_INTERVAL_MS: must be a whole number from 100 to 60000"));
  CHECK(any_starts_with(problems, "OUTBOX_WAKE_MODE: must be listen or poll"));
  CHECK(any_starts_with(problems, "OUTBOX_CLAIM_SYNCHRONOUS_COMMIT: must be on or off (got \"maybe\")"));
  CHECK(any_starts_with(problems, "OUTBOX_LOG_LEVEL: must be debug, info, warn or error"));
  CHECK(any_starts_with(problems, "OUTBOX_MAX_IN_FLIGHT:"));
  CHECK(any_starts_with(problems, "OUTBOX_NOTIFY_CHANNEL:"));
  CHECK(any_starts_with(problems, "OUTBOX_METRICS_ADDRESS:"));
  CHECK(any_starts_with(problems, "OUTBOX_EXTRA_CA_FILE: no such file \"/nonexistent/ca.pem\""));
  CHECK(any_starts_with(problems, "OUTBOX_INSTANCE_NAME:"));
  CHECK(any_starts_with(problems, "OUTBOX_BACKOFF_CAP_SECONDS: must be at least OUTBOX_BACKOFF_BASE_SECONDS"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__DEFAULT__URL: must start with https:// or http://"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY:"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__DEFAULT__RATE_PER_SECOND:"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__DEFAULT__PAUSED: must be true or false"));

  // what() lists them all, one per line.
  const std::string text = error_text_of({{"OUTBOX_CLAIM_BATCH", "0"}, {"OUTBOX_LOG_LEVEL", "x"}});
  CHECK(text.starts_with("invalid configuration (2 problems):\n  "));
  CHECK(text.find("\n  OUTBOX_CLAIM_BATCH:") != std::string::npos);
  CHECK(text.find("\n  OUTBOX_LOG_LEVEL:") != std::string::npos);
}

TEST_CASE("numbers are range-checked strictly") {
  CHECK(problems_of({{"OUTBOX_POLL_INTERVAL_MS", "99"}}).size() == 1);
  CHECK(problems_of({{"OUTBOX_POLL_INTERVAL_MS", "60001"}}).size() == 1);
  CHECK(problems_of({{"OUTBOX_CLAIM_BATCH", "1001"}}).size() == 1);
  CHECK(problems_of({{"OUTBOX_CLAIM_BATCH", "10 "}}).size() == 1);
  CHECK(problems_of({{"OUTBOX_CLAIM_BATCH", "1e2"}}).size() == 1);
  CHECK(problems_of({{"OUTBOX_CLAIM_BATCH", "99999999999999999999999"}}).size() == 1);
  CHECK(load_config({{"OUTBOX_POLL_INTERVAL_MS", "100"}}).poll_interval == 100ms);
  CHECK(load_config({{"OUTBOX_POLL_INTERVAL_MS", "60000"}}).poll_interval == 60000ms);
  CHECK(load_config({{"OUTBOX_CLAIM_BATCH", "1000"}}).claim_batch == 1000);
}

TEST_CASE("unknown OUTBOX_ variables are errors that name them") {
  const auto problems =
      problems_of({{"OUTBOX_CLAIM_BTACH", "50"}, {"OUTBOX_TOTALLY_NEW", "x"}, {"PGHOST", "db"}, {"HOME", "/root"}});
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "OUTBOX_CLAIM_BTACH: unknown setting; did you mean OUTBOX_CLAIM_BATCH?");
  CHECK(problems[1] == "OUTBOX_TOTALLY_NEW: unknown setting");
  const auto dest_typo = problems_of({{"OUTBOX_DEST_WEBHOOK_DEFAULT_URL", "https://x"}});
  REQUIRE(dest_typo.size() == 1);
  CHECK(dest_typo[0].find("OUTBOX_DEST__<PROVIDER>__<DESTINATION>__<KEY>") != std::string::npos);
}

TEST_CASE("malformed and unknown destination settings") {
  const auto problems = problems_of({{"OUTBOX_DEST__WEBHOOK__URL", "https://x"},
                                     {"OUTBOX_DEST__WEBHOOK____URL", "https://x"},
                                     {"OUTBOX_DEST__WEBHOOK__A__HEADER", "x"},
                                     {"OUTBOX_DEST__WEBHOOK__B__URL", "https://x"},
                                     {"OUTBOX_DEST__WEBHOOK__B__URLL", "https://y"},
                                     {"OUTBOX_DEST__FACEBOOK__C__URL", "https://z"}});
  CHECK(problems.size() == 5);
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__URL: malformed destination setting"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK____URL: malformed destination setting"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__A__HEADER: malformed destination setting"));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__B__URLL: unknown setting \"urll\" for a webhook destination"));
  // The known list grows with each provider; it must name them, webhook included.
  CHECK(any_starts_with(problems, "OUTBOX_DEST__FACEBOOK__C__URL: unknown provider \"facebook\" (known: "));
  CHECK(std::any_of(problems.begin(), problems.end(), [](const std::string& p) {
    return p.find("facebook") != std::string::npos && p.find("webhook") != std::string::npos;
  }));
}

TEST_CASE("a destination without a url names the variable to set") {
  const auto problems = problems_of({{"OUTBOX_DEST__WEBHOOK__DEFAULT__PAUSED", "true"}});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].starts_with("OUTBOX_DEST__WEBHOOK__DEFAULT__URL: is required"));
}

TEST_CASE("header settings are validated") {
  const auto problems = problems_of(with(webhook_env, {{"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__HOST", "evil"},
                                                       {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_OK", "fine"},
                                                       {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_BAD", "a\r\nb: c"}}));
  REQUIRE(problems.size() == 2);
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__HOST: header \"host\""));
  CHECK(any_starts_with(problems, "OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_BAD: header value must not contain CR"));
}

TEST_CASE("the lease must cover two tries of connect + handshake + request plus 5 s") {
  // Defaults (connect 3 s, request 10 s): 2 x 16 s + 5 s = 37 s. (lease_budget_test.cpp has the OAuth case.)
  const auto problems = problems_of({{"OUTBOX_LEASE_SECONDS", "15"}});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].starts_with("OUTBOX_LEASE_SECONDS: must be at least 37 s (got 15 s)"));
  CHECK(problems[0].find("another dispatcher may claim and resend") != std::string::npos);
  CHECK(load_config({{"OUTBOX_LEASE_SECONDS", "37"}}).lease == 37s);
  // Raising the timeout alone trips the rule against the default 60 s lease:
  // 2 x (3 + 3 + 21.5) + 5 = 60, 2 x (3 + 3 + 21.501) + 5 > 60.
  CHECK(problems_of({{"OUTBOX_REQUEST_TIMEOUT_MS", "21501"}}).size() == 1);
  CHECK(load_config({{"OUTBOX_REQUEST_TIMEOUT_MS", "21500"}}).request_timeout == 21500ms);
  // The file's key is named as the origin.
  const temp_file file{R"({"lease_seconds": 20})"};
  const auto from_file = problems_of({{"OUTBOX_CONFIG_FILE", file.path()}});
  REQUIRE(from_file.size() == 1);
  CHECK(from_file[0].starts_with("config file key \"lease_seconds\": must be at least 37 s"));
  // The connect timeout is part of the request deadline.
  const auto connect = problems_of({{"OUTBOX_CONNECT_TIMEOUT_MS", "10001"}, {"OUTBOX_LEASE_SECONDS", "3600"}});
  REQUIRE(connect.size() == 1);
  CHECK(connect[0].starts_with("OUTBOX_CONNECT_TIMEOUT_MS: must not exceed OUTBOX_REQUEST_TIMEOUT_MS"));
}

TEST_CASE("a retry horizon beyond 48 h is allowed with a warning") {
  const config c = load_config(with(webhook_env, {{"OUTBOX_RETRY_HORIZON_HOURS", "72"}}));
  CHECK(c.backoff.retry_horizon == 72h);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("48 h") != std::string::npos);
}

TEST_CASE("config file problems") {
  CHECK(any_starts_with(problems_of({{"OUTBOX_CONFIG_FILE", "/nonexistent/outbox.json"}}),
                        "OUTBOX_CONFIG_FILE \"/nonexistent/outbox.json\": cannot be read"));

  const temp_file not_object{"[1, 2]"};
  CHECK(any_starts_with(problems_of({{"OUTBOX_CONFIG_FILE", not_object.path()}}),
                        "OUTBOX_CONFIG_FILE \"" + not_object.path() + "\": the top level must be a JSON object"));

  const temp_file unknown{R"({"claim_btach": 5, "claim_batch": {"x": 1}, "destinations": {"webhook": 3}})"};
  const auto problems = problems_of({{"OUTBOX_CONFIG_FILE", unknown.path()}});
  CHECK(problems.size() == 3);
  CHECK(any_starts_with(problems, "config file key \"claim_btach\": unknown setting; did you mean claim_batch?"));
  CHECK(any_starts_with(problems, "config file key \"claim_batch\": must be a string, number or boolean"));
  CHECK(any_starts_with(problems, "config file key \"destinations.webhook\": must be an object"));

  const temp_file bad_value{R"({"claim_batch": 0, "destinations": {"webhook": {"x": {"url": "nope"}}}})"};
  const auto value_problems = problems_of({{"OUTBOX_CONFIG_FILE", bad_value.path()}});
  CHECK(any_starts_with(value_problems, "config file key \"claim_batch\": must be a whole number"));
  CHECK(any_starts_with(value_problems, "config file key \"destinations.webhook.x.url\": must start with"));
}

TEST_CASE("secrets never appear in describe()") {
  const config c = load_config({{"DATABASE_URL", "postgresql://app:dbpass111@db:5432/crm?sslmode=require"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://example.com/hook?token=urltok222"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET", "whsec_c2VjcmV0MzMz"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__AUTHORIZATION", "Bearer hdr444"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_API_KEY", "key555"},
                                {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_TEAM", "crm"}});
  const std::string text = describe(c);
  for (const char* secret : {"dbpass111", "urltok222", "c2VjcmV0MzMz", "hdr444", "key555"}) {
    CAPTURE(secret);
    CHECK(text.find(secret) == std::string::npos);
  }
  CHECK(text.find("DATABASE_URL=postgresql://app:***@db:5432/crm?sslmode=require\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__URL=https://example.com/hook?token=***\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET=***\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__AUTHORIZATION=***\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_API_KEY=***\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__X_TEAM=crm\n") != std::string::npos);
}

TEST_CASE("describe() prints every effective setting in environment form") {
  const config c = load_config(with(webhook_env, {{"OUTBOX_CLAIM_BATCH", "42"}, {"OUTBOX_METRICS_ADDRESS", ""}}));
  const std::string text = describe(c);
  CHECK(text.find("OUTBOX_CLAIM_BATCH=42\n") != std::string::npos);
  CHECK(text.find("OUTBOX_WAKE_MODE=listen\n") != std::string::npos);
  CHECK(text.find("OUTBOX_LEASE_SECONDS=60\n") != std::string::npos);
  CHECK(text.find("OUTBOX_RETRY_HORIZON_HOURS=36\n") != std::string::npos);
  CHECK(text.find("OUTBOX_LOG_LEVEL=info\n") != std::string::npos);
  CHECK(text.find("OUTBOX_METRICS_ADDRESS=\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__URL=https://example.com/hook\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY=16\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__RATE_PER_SECOND=0\n") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__PAUSED=false\n") != std::string::npos);
  // Every global variable appears, so the output can be diffed against expectations.
  for (const char* name :
       {"DATABASE_URL", "OUTBOX_INSTANCE_NAME", "OUTBOX_POLL_INTERVAL_MS", "OUTBOX_MAX_IN_FLIGHT",
        "OUTBOX_REQUEST_TIMEOUT_MS", "OUTBOX_CONNECT_TIMEOUT_MS", "OUTBOX_SWEEP_INTERVAL_SECONDS",
        "OUTBOX_SHUTDOWN_GRACE_SECONDS", "OUTBOX_LISTEN_HEARTBEAT_SECONDS", "OUTBOX_BACKOFF_BASE_SECONDS",
        "OUTBOX_BACKOFF_CAP_SECONDS", "OUTBOX_MAX_ATTEMPTS", "OUTBOX_EXTRA_CA_FILE", "OUTBOX_MAX_PAYLOAD_BYTES"}) {
    CAPTURE(name);
    CHECK(text.find(std::string{"\n"} + name + "=") != std::string::npos);
  }
}

TEST_CASE("secrets never appear in error text") {
  // A bad whsec_ secret, an unknown variable holding a secret, a malformed
  // destination variable, a header with a secret value: none is echoed.
  const std::string text = error_text_of({
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://example.com"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET", "whsec_!!topsecret1!!"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__SECRTE", "topsecret2"},
      {"OUTBOX_DEST__WEBHOOK__TOKEN", "topsecret3"},
      {"OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__AUTHORIZATION", "Bearer topsecret4\r\n"},
      {"OUTBOX_API_TOKEN", "topsecret5"},
  });
  CHECK(text.find("topsecret") == std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET:") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRTE:") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__TOKEN:") != std::string::npos);
  CHECK(text.find("OUTBOX_DEST__WEBHOOK__DEFAULT__HEADER__AUTHORIZATION:") != std::string::npos);
  CHECK(text.find("OUTBOX_API_TOKEN:") != std::string::npos);

  // A JSON syntax error next to a secret reports only the position.
  const temp_file broken{R"({"destinations": {"webhook": {"d": {"secret": "topsecret6" oops}}}})"};
  const auto problems = problems_of({{"OUTBOX_CONFIG_FILE", broken.path()}});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("not valid JSON (error at byte") != std::string::npos);
  CHECK(problems[0].find("topsecret") == std::string::npos);
}

TEST_CASE("provider registry lists webhook") {
  const auto kinds = provider_kinds();
  REQUIRE(kinds.size() >= 1);
  CHECK(kinds[0].kind == "webhook");
  CHECK(kinds[0].validate({{"url", "https://x"}}).empty());
}

TEST_CASE("process_environment reads the real environment") {
  ::setenv("OUTBOX_CONFIG_TEST_PROBE", "a=b", 1);
  const environment env = process_environment();
  ::unsetenv("OUTBOX_CONFIG_TEST_PROBE");
  const auto it = env.find("OUTBOX_CONFIG_TEST_PROBE");
  REQUIRE(it != env.end());
  CHECK(it->second == "a=b");
}

}  // namespace config_test

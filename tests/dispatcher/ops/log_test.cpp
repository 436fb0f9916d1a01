#include "dispatcher/ops/log.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace log_test {

using namespace outbox;
using nlohmann::json;
using namespace std::chrono_literals;
using std::chrono::system_clock;

namespace {

system_clock::time_point fixed_now() { return system_clock::time_point{} + 1614265330123ms; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("format_timestamp is RFC 3339 UTC with milliseconds") {
  CHECK(format_timestamp(system_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
  CHECK(format_timestamp(fixed_now()) == "2021-02-25T15:02:10.123Z");
  CHECK(format_timestamp(system_clock::time_point{} + 951782400s + 999ms + 999us) == "2000-02-29T00:00:00.999Z");
}

TEST_CASE("levels parse and print") {
  CHECK(parse_log_level("debug") == log_level::debug);
  CHECK(parse_log_level("INFO") == log_level::info);
  CHECK(parse_log_level("warn") == log_level::warn);
  CHECK(parse_log_level("error") == log_level::error);
  CHECK_FALSE(parse_log_level("warning").has_value());
  CHECK_FALSE(parse_log_level("").has_value());
  CHECK(to_string(log_level::warn) == "warn");
}

TEST_CASE("a log line is one JSON object with ts, level, msg and fields") {
  std::ostringstream out;
  logger log{log_level::debug, &out, &fixed_now};
  log.info("claimed", {{"rows", 12}, {"destination", "webhook/default"}});
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 1);
  CHECK(out.str().back() == '\n');
  CHECK(lines[0].starts_with(R"({"ts":"2021-02-25T15:02:10.123Z","level":"info","msg":"claimed")"));
  const json j = json::parse(lines[0]);
  CHECK(j["ts"] == "2021-02-25T15:02:10.123Z");
  CHECK(j["level"] == "info");
  CHECK(j["msg"] == "claimed");
  CHECK(j["rows"] == 12);
  CHECK(j["destination"] == "webhook/default");
}

TEST_CASE("every level method writes its level") {
  std::ostringstream out;
  logger log{log_level::debug, &out, &fixed_now};
  log.debug("d");
  log.info("i");
  log.warn("w");
  log.error("e");
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 4);
  CHECK(json::parse(lines[0])["level"] == "debug");
  CHECK(json::parse(lines[1])["level"] == "info");
  CHECK(json::parse(lines[2])["level"] == "warn");
  CHECK(json::parse(lines[3])["level"] == "error");
}

TEST_CASE("levels below the minimum are dropped, lazily") {
  std::ostringstream out;
  logger log{log_level::warn, &out, &fixed_now};
  int built = 0;
  log.debug("hidden", [&] {
    ++built;
    return json{{"x", 1}};
  });
  log.info("hidden too");
  CHECK(out.str().empty());
  CHECK(built == 0);
  CHECK_FALSE(log.enabled(log_level::info));
  CHECK(log.enabled(log_level::error));

  log.error("shown", [&] {
    ++built;
    return json{{"x", 1}};
  });
  CHECK(built == 1);
  CHECK(json::parse(lines_of(out.str()).at(0))["x"] == 1);

  log.set_level(log_level::debug);
  log.debug("now shown");
  CHECK(lines_of(out.str()).size() == 2);
}

TEST_CASE("a field builder that throws still logs the message") {
  std::ostringstream out;
  logger log{log_level::info, &out, &fixed_now};
  log.info("survives", []() -> json { throw std::runtime_error("boom"); });
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0])["msg"] == "survives");
}

TEST_CASE("secret-looking keys are redacted at any depth") {
  std::ostringstream out;
  logger log{log_level::info, &out, &fixed_now};
  log.info("request", {{"secret", "s1"},
                       {"access_token", "t1"},
                       {"headers", {{"Authorization", "Bearer t2"}, {"x-api-key", "k1"}, {"x-trace", "ok"}}},
                       {"items", json::array({json{{"password", "p1"}}, json{{"name", "n"}}})},
                       {"idempotency_key", "0f8fad5b"},
                       {"lease_token", "lt-1"}});
  const std::string text = out.str();
  for (const char* leaked : {"s1", "t1", "Bearer t2", "k1", "p1"}) {
    CAPTURE(leaked);
    CHECK(text.find(std::string{"\""} + leaked + "\"") == std::string::npos);
  }
  const json j = json::parse(text);
  CHECK(j["secret"] == "***");
  CHECK(j["access_token"] == "***");
  CHECK(j["headers"]["Authorization"] == "***");
  CHECK(j["headers"]["x-api-key"] == "***");
  CHECK(j["headers"]["x-trace"] == "ok");
  CHECK(j["items"][0]["password"] == "***");
  CHECK(j["items"][1]["name"] == "n");
  CHECK(j["idempotency_key"] == "0f8fad5b");  // identifiers, not secrets
  CHECK(j["lease_token"] == "lt-1");
}

TEST_CASE("passwords inside URLs and conninfo strings are masked") {
  std::ostringstream out;
  logger log{log_level::info, &out, &fixed_now};
  log.info("connecting", {{"database_url", "postgresql://app:hunter2@db:5432/crm"},
                          {"conninfo", "host=db password=hunter3 user=app"},
                          {"target", "https://api.example.com/x?access_token=hunter4&v=1"}});
  const std::string text = out.str();
  CHECK(text.find("hunter") == std::string::npos);
  const json j = json::parse(text);
  CHECK(j["database_url"] == "postgresql://app:***@db:5432/crm");
  CHECK(j["conninfo"] == "host=db password=*** user=app");
  CHECK(j["target"] == "https://api.example.com/x?access_token=***&v=1");
}

TEST_CASE("redact_url") {
  CHECK(redact_url("postgresql://app:pw@db/crm") == "postgresql://app:***@db/crm");
  CHECK(redact_url("postgresql://app@db/crm") == "postgresql://app@db/crm");
  CHECK(redact_url("postgresql://db/crm?password=pw&sslmode=require") ==
        "postgresql://db/crm?password=***&sslmode=require");
  CHECK(redact_url("postgresql://u:p%40ss@[::1]:5432/x") == "postgresql://u:***@[::1]:5432/x");
  CHECK(redact_url("host=db password='a b\\' c' dbname=x") == "host=db password=*** dbname=x");
  CHECK(redact_url("host=db password = pw dbname=x") == "host=db password = *** dbname=x");
  CHECK(redact_url("https://example.com/hook") == "https://example.com/hook");
  CHECK(redact_url("") == "");
}

TEST_CASE("redact returns a masked copy") {
  const json in = {{"token", "t"}, {"n", 1}, {"inner", {{"client_secret", "c"}}}};
  const json out = redact(in);
  CHECK(out["token"] == "***");
  CHECK(out["n"] == 1);
  CHECK(out["inner"]["client_secret"] == "***");
  CHECK(in["token"] == "t");  // the input is untouched
}

TEST_CASE("is_secret_key") {
  for (const char* k :
       {"secret", "SECRET", "client_secret", "access_token", "Access-Token", "password", "passwd", "api_key",
        "x-api-key", "KEY", "authorization", "Cookie", "credentials", "OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"}) {
    CAPTURE(k);
    CHECK(is_secret_key(k));
  }
  for (const char* k :
       {"url", "rows", "destination", "idempotency_key", "idempotency-key", "lease_token", "msg", "status"}) {
    CAPTURE(k);
    CHECK_FALSE(is_secret_key(k));
  }
}

TEST_CASE("reserved names in fields do not clobber ts, level or msg") {
  std::ostringstream out;
  logger log{log_level::info, &out, &fixed_now};
  log.info("real", {{"msg", "fake"}, {"level", "error"}, {"ts", "then"}});
  const json j = json::parse(out.str());
  CHECK(j["msg"] == "real");
  CHECK(j["level"] == "info");
  CHECK(j["ts"] == "2021-02-25T15:02:10.123Z");
  CHECK(j["field_msg"] == "fake");
  CHECK(j["field_level"] == "error");
  CHECK(j["field_ts"] == "then");
}

TEST_CASE("non-object fields go under \"fields\"; escaping and bad UTF-8 never break a line") {
  std::ostringstream out;
  logger log{log_level::info, &out, &fixed_now};
  log.info("list", json::array({1, 2}));
  log.info("quote \" and\nnewline", {{"body", "bad \xff utf8"}});
  log.info(std::string_view{"bad \xfe msg"});
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 3);
  CHECK(json::parse(lines[0])["fields"] == json::array({1, 2}));
  const json second = json::parse(lines[1]);
  CHECK(second["msg"] == "quote \" and\nnewline");
  CHECK(second["body"] == "bad \xEF\xBF\xBD utf8");
  CHECK(json::parse(lines[2])["msg"] == "bad \xEF\xBF\xBD msg");
}

TEST_CASE("lines from several threads never interleave") {
  std::ostringstream out;
  logger log{log_level::info, &out, &fixed_now};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 200; ++i) log.info("tick", {{"thread", t}, {"i", i}, {"pad", std::string(100, 'x')}});
    });
  }
  for (auto& th : threads) th.join();
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 800);
  for (const auto& line : lines) CHECK(json::parse(line).is_object());
}

TEST_CASE("the default sink writes whole lines to stderr") {
  const auto path = std::filesystem::temp_directory_path() / ("outbox_log_test_" + std::to_string(::getpid()));
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  {
    logger log{log_level::info, nullptr, &fixed_now};
    log.info("to stderr", {{"n", 1}});
    log.debug("filtered");
  }
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in{path};
  const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  std::filesystem::remove(path);
  const auto lines = lines_of(text);
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0])["msg"] == "to stderr");
}

}  // namespace log_test

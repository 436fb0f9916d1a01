// Start-up failures end the process with clear output and the documented exit
// codes, and secrets never reach any output (the fixture checks every process
// of every e2e test for the destination secret).
#include <doctest/doctest.h>

#include <csignal>
#include <sstream>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace startup_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::response_plan;

namespace {

std::vector<std::string> non_empty_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("dispatcher run with a bad configuration exits 2 and names each problem on its own line") {
  e2e_fixture fx;
  const environment bad{{"OUTBOX_LEASE_SECONDS", "abc"},
                        {"OUTBOX_NO_SUCH_SETTING", "1"},
                        // A typo in a secret's name: the name must be reported, the value never.
                        {"OUTBOX_DEST__WEBHOOK__DEFAULT__SECRTE", fx.secret()}};
  const auto r = fx.cli({"run"}, bad, 15s);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  const std::vector<std::string> names{"OUTBOX_LEASE_SECONDS", "OUTBOX_NO_SUCH_SETTING",
                                       "OUTBOX_DEST__WEBHOOK__DEFAULT__SECRTE"};
  for (const auto& name : names) {
    INFO("problem for " << name);
    std::size_t lines_naming_it = 0;
    for (const auto& line : non_empty_lines(r.output)) {
      if (line.find(name + ":") == std::string::npos) continue;
      ++lines_naming_it;
      for (const auto& other : names) {
        if (other != name) CHECK(line.find(other + ":") == std::string::npos);  // one problem per line
      }
    }
    CHECK(lines_naming_it == 1);
  }
  CHECK(r.output.find("\"abc\"") != std::string::npos);  // the bad value, which is not a secret, is shown
  CHECK(r.output.find("3 problems") != std::string::npos);
  CHECK(r.output.find("dispatcher starting") == std::string::npos);
}

TEST_CASE("dispatcher run with an unreachable database exits 1 with one clear line") {
  e2e_fixture fx;
  const std::string password = "pw-Zq81-not-for-logs";
  const environment unreachable{{"DATABASE_URL", "postgresql://outbox:" + password + "@127.0.0.1:1/outbox"}};
  const auto started = std::chrono::steady_clock::now();
  const auto r = fx.cli({"run"}, unreachable, 30s);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(std::chrono::steady_clock::now() - started < 15s);  // fails fast, no retry loop
  const auto lines = non_empty_lines(r.output);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].starts_with("dispatcher run: error:"));
  CHECK(lines[0].find("127.0.0.1") != std::string::npos);  // says where it tried
  CHECK(r.output.find(password) == std::string::npos);
}

TEST_CASE("secrets are masked by `dispatcher config` and absent from a debug-level run that retries") {
  e2e_fixture fx;
  const auto config = fx.cli({"config"});
  INFO(config.output);
  CHECK(config.exit_code == 0);
  CHECK(config.output.find("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET=***") != std::string::npos);
  CHECK(config.output.find("OUTBOX_DEST__WEBHOOK__DEFAULT__URL=https://localhost:") != std::string::npos);

  // The most talkative run: debug logging, a failed attempt, a retry, a stop.
  fx.server.script({response_plan::reply(503, R"({"error":"busy"})"), response_plan::reply(200)});
  auto& d = fx.start_dispatcher({{"OUTBOX_LOG_LEVEL", "debug"}}, "dispatcher-debug");
  REQUIRE(d.wait_for_log("listening for new rows", 15s));
  const auto id = fx.enqueue(1);
  REQUIRE(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 15s));
  d.signal(SIGTERM);
  CHECK(d.wait_exit(10s) == 0);
  CHECK(d.count_in_logs("\"row settled\"") == 2);  // the log really has the details
  CHECK(d.logs().find(fx.secret()) == std::string::npos);
  const auto signature = fx.server.requests().front().header("webhook-signature").value_or("");
  CHECK(signature.starts_with("v1,"));  // signed with the secret
  CHECK(d.logs().find(signature.substr(3)) == std::string::npos);
}

}  // namespace startup_e2e

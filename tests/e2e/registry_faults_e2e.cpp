// Destinations of the registry under the faults every feature meets: a
// destination created and its secret rotated while the dispatchers' backends
// are terminated, PostgreSQL restarts and a dispatcher is SIGKILLed. Every row
// reaches its endpoint; a row is received twice only if the killed process
// held it; every request is signed with one of the two secrets.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "providers/crypto.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace registry_faults_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

namespace {

constexpr int rows_per_wave = 60;

std::string secret_file(const outbox::test::scratch_dir& dir, const std::string& name, const std::string& whsec) {
  std::ofstream(dir.path / name) << whsec;
  return "SECRET=@" + (dir.path / name).string();
}

void terminate_backends(const e2e_fixture& fx) {
  fx.db.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
      "WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name LIKE 'outbox-dispatcher%'",
      {fx.db.name()});
}

void enqueue_wave(const e2e_fixture& fx, int first) {
  fx.db.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', '{}'::jsonb, 'brand_h') "
      "FROM generate_series($1::bigint, $1::bigint + $2 - 1) g",
      {std::to_string(first), std::to_string(rows_per_wave)});
}

// The request's signature is the HMAC of one of `secrets` (Standard Webhooks).
bool signed_by_one_of(const outbox::test::recorded_request& r, const std::vector<std::string>& secrets) {
  const std::string text =
      r.header("webhook-id").value_or("") + "." + r.header("webhook-timestamp").value_or("") + "." + r.body;
  for (const auto& whsec : secrets) {
    const auto key = *outbox::providers::base64_decode(whsec.substr(6));
    if (r.header("webhook-signature") ==
        "v1," + outbox::providers::base64_encode(outbox::providers::hmac_sha256(key, text)))
      return true;
  }
  return false;
}

}  // namespace

// Restarts its server: the "serial" suite, which runs on a server of its own (CMakeLists.txt).
TEST_CASE("registry under faults: created, rotated, backends terminated, a restart and a SIGKILL; nothing lost" *
          doctest::test_suite("serial")) {
  e2e_fixture fx;
  // A slow endpoint: each dispatcher has requests out whenever it is killed.
  fx.server.set_fallback(
      [](const outbox::test::recorded_request&) { return outbox::test::response_plan::reply(200).after(150ms); });
  const outbox::test::scratch_dir dir;
  const std::string key_file = (dir.path / "sealing.pem").string();
  REQUIRE(fx.cli({"keys", "generate", key_file}).exit_code == 0);
  REQUIRE(fx.cli({"keys", "publish", "--key-file", key_file}).exit_code == 0);
  const std::vector<std::string> secrets{"whsec_Zmlyc3RmaXJzdGZpcnN0Zmlyc3Q=", "whsec_c2Vjb25kc2Vjb25kc2Vjb25k"};
  const outbox::environment env{{"OUTBOX_SEALING_KEY_FILE", key_file},
                                {"OUTBOX_LEASE_SECONDS", "9"},
                                {"OUTBOX_REQUEST_TIMEOUT_MS", "1000"},
                                {"OUTBOX_CONNECT_TIMEOUT_MS", "500"}};
  const auto named = [&](const std::string& name) {
    auto e = env;
    e["OUTBOX_INSTANCE_NAME"] = name;  // the leases it takes say so
    return e;
  };
  auto& one = fx.start_dispatcher(named("one"), "one");
  auto& two = fx.start_dispatcher(named("two"), "two");
  REQUIRE(one.wait_for_log("listening for new rows", 15s));
  REQUIRE(two.wait_for_log("listening for new rows", 15s));

  // Rows first, then the destination, their backends terminated in between.
  enqueue_wave(fx, 1);
  terminate_backends(fx);
  const std::string url = "URL=" + fx.server.url("/h", "localhost");
  REQUIRE(fx.cli({"destination", "set", "webhook", "brand_h", url, "--secret", secret_file(dir, "s1", secrets[0])})
              .exit_code == 0);
  // The secret rotated while the backends go again, then the server restarts under them.
  terminate_backends(fx);
  REQUIRE(
      fx.cli({"destination", "set", "webhook", "brand_h", "--secret", secret_file(dir, "s2", secrets[1])}).exit_code ==
      0);
  enqueue_wave(fx, 1 + rows_per_wave);
  const char* pg_ctl = std::getenv("PG_TEST_CTL");
  REQUIRE(pg_ctl != nullptr);
  REQUIRE(std::system((std::string(pg_ctl) + " restart -m fast >/dev/null 2>&1").c_str()) == 0);
  // One dispatcher dies with whatever it holds; a new one takes its place.
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") > 0; }, 30s));
  enqueue_wave(fx, 1 + 2 * rows_per_wave);
  REQUIRE(eventually([&] { return fx.count("state = 'sending' AND lease_owner LIKE 'one:%'") > 0; }, 30s));
  one.kill();
  (void)one.wait_exit(5s);
  // Its leases outlive it: the rows it held.
  std::set<std::string> held_by_killed;
  const auto held =
      fx.db.query("SELECT idempotency_key FROM event_delivery WHERE state = 'sending' AND lease_owner LIKE 'one:%'");
  for (int j = 0; j < held.rows(); ++j) held_by_killed.insert(std::string(held.text(j, 0)));
  (void)fx.start_dispatcher(named("three"), "three");

  const long long total = 3 * rows_per_wave;
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == total; }, 60s));
  CHECK(fx.count("state <> 'sent'") == 0);
  std::map<std::string, int> received;
  int unsigned_requests = 0;
  for (const auto& r : fx.server.requests()) {
    if (r.target != "/h") continue;
    ++received[r.header("webhook-id").value_or("")];
    unsigned_requests += signed_by_one_of(r, secrets) ? 0 : 1;
  }
  CHECK(static_cast<long long>(received.size()) == total);  // every row reached the endpoint
  CHECK(unsigned_requests == 0);
  for (const auto& [key, n] : received) {
    CAPTURE(key);
    if (n > 1) CHECK(held_by_killed.contains(key));  // a second request only for what the killed one held
  }
  CHECK_FALSE(held_by_killed.empty());  // the kill did catch requests under way
}

}  // namespace registry_faults_e2e

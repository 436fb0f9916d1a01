// Destinations created, changed, disabled and broken in the database while two
// dispatchers run: each picks the change up without a restart, a row enqueued
// before its destination existed is delivered (never dead), a rotated secret
// signs the next request, and a bad entry stops only its own destination.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "providers/crypto.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace registry_reload_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
namespace fs = std::filesystem;

namespace {

// Writes `text` and a newline to `name` in `dir`; returns the file's path.
std::string write_file(const outbox::test::scratch_dir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.path / name) << text << "\n";
  return (dir.path / name).string();
}

// Whether the request to `target` carrying row `key` is signed with `whsec`.
bool signed_with(const e2e_fixture& fx, const std::string& key, const std::string& whsec) {
  for (const auto& r : fx.server.requests()) {
    if (r.header("webhook-id") != key) continue;
    const auto secret = *outbox::providers::base64_decode(whsec.substr(6));
    const std::string text = *r.header("webhook-id") + "." + *r.header("webhook-timestamp") + "." + r.body;
    return r.header("webhook-signature") ==
           "v1," + outbox::providers::base64_encode(outbox::providers::hmac_sha256(secret, text));
  }
  return false;
}

std::int64_t enqueue_for(e2e_fixture& fx, std::int64_t lead, const std::string& destination) {
  fx.db.query("SELECT enqueue_event_delivery($1, 'webhook', 'Lead', '{}'::jsonb, $2)",
              {std::to_string(lead), destination});
  return fx.db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = $1", {std::to_string(lead)});
}

std::string column(const e2e_fixture& fx, std::int64_t id, const std::string& name) {
  return std::string(
      fx.db.query("SELECT " + name + "::text FROM event_delivery WHERE id = $1", {std::to_string(id)}).text(0, 0));
}

}  // namespace

TEST_CASE("registry reload: two running dispatchers apply created, rotated, disabled and broken destinations") {
  e2e_fixture fx;
  const outbox::test::scratch_dir dir;
  const std::string key_file = (dir.path / "sealing.pem").string();
  REQUIRE(fx.cli({"keys", "generate", key_file}).exit_code == 0);
  REQUIRE(fx.cli({"keys", "publish"}, {{"OUTBOX_SEALING_KEY_FILE", key_file}}).exit_code == 0);
  const outbox::environment with_key{{"OUTBOX_SEALING_KEY_FILE", key_file}};
  auto& one = fx.start_dispatcher(with_key, "one");
  auto& two = fx.start_dispatcher(with_key, "two");
  REQUIRE(one.wait_for_log("listening for new rows", 15s));
  REQUIRE(two.wait_for_log("listening for new rows", 15s));

  // Enqueued before its destination exists: it waits, then goes once the destination is created.
  const auto early = enqueue_for(fx, 1, "brand_a");
  REQUIRE(eventually([&] { return column(fx, early, "last_error").find("waits for it") != std::string::npos; }, 15s));
  const std::string first = "whsec_Zmlyc3RzZWNyZXRmaXJzdHNlY3JldA==";
  const std::string url = fx.server.url("/a", "localhost");
  auto r = fx.cli({"destination", "set", "webhook", "brand_a", "URL=" + url, "--secret",
                   "SECRET=@" + write_file(dir, "first", first)});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(one.wait_for_log("destination added from the registry", 10s));
  REQUIRE(two.wait_for_log("destination added from the registry", 10s));
  REQUIRE(eventually([&] { return column(fx, early, "state") == "sent"; }, 40s));
  CHECK(signed_with(fx, column(fx, early, "idempotency_key"), first));

  // A rotated secret signs the next request; each row is sent once.
  const std::string second = "whsec_c2Vjb25kc2Vjb25kc2Vjb25kc2Vjb25k";
  REQUIRE(
      fx.cli({"destination", "set", "webhook", "brand_a", "--secret", "SECRET=@" + write_file(dir, "second", second)})
          .exit_code == 0);
  REQUIRE(one.wait_for_log("destination changed in the registry", 10s));
  REQUIRE(two.wait_for_log("destination changed in the registry", 10s));
  const auto later = enqueue_for(fx, 2, "brand_a");
  REQUIRE(eventually([&] { return column(fx, later, "state") == "sent"; }, 15s));
  CHECK(signed_with(fx, column(fx, later, "idempotency_key"), second));
  CHECK(fx.server.requests().size() == 2);

  // Broken by hand: only that destination stops, its rows wait, the reason is in status.
  fx.db.query("UPDATE outbox_destination SET settings = settings || '{\"url\": \"ftp://bad\"}' WHERE name = 'brand_a'");
  REQUIRE(one.wait_for_log("destination in the registry is not usable", 10s));
  REQUIRE(two.wait_for_log("destination in the registry is not usable", 10s));
  const auto waiting = enqueue_for(fx, 3, "brand_a");
  const auto elsewhere = fx.enqueue(4);
  REQUIRE(eventually([&] { return column(fx, elsewhere, "state") == "sent"; }, 15s));
  const std::string shown = "registry destination webhook/brand_a not usable: url: ";
  REQUIRE(eventually([&] { return fx.cli({"status"}).output.find(shown) != std::string::npos; }, 15s));
  CHECK(column(fx, waiting, "state") == "pending");
  CHECK(column(fx, waiting, "attempts") == "0");

  // Disabled: still waiting; enabled with a good URL again: delivered.
  REQUIRE(fx.cli({"destination", "set", "webhook", "brand_a", "URL=" + url, "--disable"}).exit_code == 0);
  REQUIRE(one.wait_for_log("disabled in the registry", 10s));
  CHECK(column(fx, waiting, "state") == "pending");
  REQUIRE(fx.cli({"destination", "set", "webhook", "brand_a", "--enable"}).exit_code == 0);
  REQUIRE(eventually([&] { return column(fx, waiting, "state") == "sent"; }, 90s));
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery WHERE state = 'dead'") == 0);
}

TEST_CASE("registry with the wrong key file: one start-up error names the destinations it cannot open; others go") {
  e2e_fixture fx;
  const outbox::test::scratch_dir dir;
  const std::string published = (dir.path / "published.pem").string();
  const std::string other = (dir.path / "other.pem").string();
  REQUIRE(fx.cli({"keys", "generate", published}).exit_code == 0);
  REQUIRE(fx.cli({"keys", "generate", other}).exit_code == 0);
  REQUIRE(fx.cli({"keys", "publish", "--key-file", published}).exit_code == 0);
  const std::string url = fx.server.url("/k", "localhost");
  REQUIRE(fx.cli({"destination", "set", "webhook", "brand_k", "URL=" + url, "--secret",
                  "SECRET=@" + write_file(dir, "k", "whsec_a2tra2tra2tra2tra2tr")})
              .exit_code == 0);
  REQUIRE(
      fx.cli({"destination", "set", "webhook", "brand_plain", "URL=" + fx.server.url("/p", "localhost")}).exit_code ==
      0);
  const auto sealed_for_other_key = enqueue_for(fx, 1, "brand_k");
  const auto plain = enqueue_for(fx, 2, "brand_plain");
  const auto from_environment = fx.enqueue(3);

  // The dispatcher holds another key than the one the secrets were sealed for.
  auto& d = fx.start_dispatcher({{"OUTBOX_SEALING_KEY_FILE", other}}, "wrong-key");
  REQUIRE(d.wait_for_log("registry destinations this dispatcher cannot use", 15s));
  const std::string logs = d.logs();
  const auto line = logs.substr(logs.find("registry destinations this dispatcher cannot use"));
  CHECK(line.substr(0, line.find('\n')).find("\"destinations\":\"webhook/brand_k\"") != std::string::npos);
  CHECK(logs.find("which this dispatcher does not hold") != std::string::npos);
  REQUIRE(eventually([&] { return column(fx, plain, "state") == "sent"; }, 15s));
  REQUIRE(eventually([&] { return column(fx, from_environment, "state") == "sent"; }, 15s));
  CHECK(column(fx, sealed_for_other_key, "state") == "pending");
  CHECK(column(fx, sealed_for_other_key, "attempts") == "0");
  const std::string shown = "registry destination webhook/brand_k not usable: secret: cannot be opened";
  CHECK(eventually([&] { return fx.cli({"status"}).output.find(shown) != std::string::npos; }, 15s));
  CHECK(d.running());
}

}  // namespace registry_reload_e2e

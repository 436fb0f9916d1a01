// Destinations the registry adds, changes, disables and removes while the
// engine runs, in virtual time: a row is never dead for a destination that
// exists when it is looked at, waits while its destination is not usable, and
// a changed secret signs the next request.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "db/destination_registry_store.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"
#include "providers/crypto.hpp"
#include "tests/support/engine_rig.hpp"

namespace engine_registry_test {

using namespace std::chrono_literals;
using outbox::test::engine_rig;
namespace fs = std::filesystem;

namespace {

// The dispatcher's sealing key, in a file as OUTBOX_SEALING_KEY_FILE names it.
struct key_file {
  outbox::secrets::sealing_key key = outbox::secrets::sealing_key::generate();
  fs::path path = fs::temp_directory_path() / ("engine-registry-" + std::to_string(::getpid()) + ".pem");
  key_file() { std::ofstream(path) << key.private_pem(); }
  ~key_file() { fs::remove(path); }
};

outbox::db::registry_entry webhook_entry(const key_file& k, const std::string& name, const std::string& secret,
                                         const std::string& url = "https://registry.test/hook") {
  outbox::db::registry_entry e;
  e.provider = "webhook";
  e.name = name;
  e.settings = {{"url", url}};
  e.secrets = {{"secret", k.key.seal(secret, "webhook/" + name + "/secret")}};
  return e;
}

// The registry changed: what the trigger's NOTIFY says.
void registry_changed(engine_rig& rig) { rig.store.notify(std::string{outbox::db::destinations_changed_payload}); }

std::string header(const outbox::providers::http_request& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return {};
}

// "v1,<base64 HMAC-SHA256(secret bytes, id.timestamp.body)>", as Standard Webhooks signs.
std::string signature(const outbox::providers::http_request& r, const std::string& whsec) {
  const auto key = *outbox::providers::base64_decode(whsec.substr(6));
  const std::string signed_text = header(r, "webhook-id") + "." + header(r, "webhook-timestamp") + "." + r.body;
  return "v1," + outbox::providers::base64_encode(outbox::providers::hmac_sha256(key, signed_text));
}

}  // namespace

TEST_CASE("engine registry: a destination created after its row was enqueued delivers the row, never dead") {
  const key_file k;
  engine_rig rig([&](auto& env) { env["OUTBOX_SEALING_KEY_FILE"] = k.path.string(); });
  rig.start();
  const auto id = rig.enqueue(1, "Lead", "{}", "brand_a");
  // The grace period runs (600 s): the row waits with the reason, and is not dead.
  REQUIRE(rig.run_until([&] { return rig.row(id).last_error.find("waits for it") != std::string::npos; }));
  CHECK(rig.row(id).state == "pending");
  CHECK(rig.row(id).last_error.find("dispatcher destination set webhook brand_a") != std::string::npos);
  rig.store.registry.push_back(webhook_entry(k, "brand_a", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  registry_changed(rig);
  REQUIRE(rig.run_until_state(id, "sent", 60s));
  CHECK(rig.logs().find("destination added from the registry") != std::string::npos);
  REQUIRE(rig.http.sent.size() == 1);
  CHECK(rig.http.sent[0].request.url == "https://registry.test/hook");
}

TEST_CASE("engine registry: a row claimed before the reload that brings its new destination is sent within 2 s") {
  const key_file k;
  engine_rig rig([&](auto& env) {
    env["OUTBOX_SEALING_KEY_FILE"] = k.path.string();
    env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "60";  // the safety-net re-read comes too late to help
  });
  rig.start();
  // Created in the same breath as the row, its notification not heard yet: the
  // claim sees the row first. The grace (600 s) must not turn into a 30 s wait.
  rig.store.registry.push_back(webhook_entry(k, "brand_c", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  const auto t0 = rig.clock.system_now();
  const auto id = rig.enqueue(5, "Lead", "{}", "brand_c");
  REQUIRE(rig.run_until_state(id, "sent", 60s));
  CHECK(rig.clock.system_now() - t0 <= 3s);
  CHECK(rig.http.sent.size() == 1);
}

TEST_CASE("engine registry: a row for a destination nobody creates is dead after the grace period, not before") {
  engine_rig rig([](auto& env) { env["OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS"] = "120"; });
  rig.start();
  const auto t0 = rig.clock.system_now();
  const auto id = rig.enqueue(2, "Lead", "{}", "nobody");
  REQUIRE(rig.run_until_state(id, "dead", 300s));
  CHECK(rig.clock.system_now() - t0 >= 120s);
  CHECK(rig.row(id).attempts <= 1);
  CHECK(rig.row(id).last_error.find("no destination 'nobody' is configured for provider 'webhook'") == 0);
  CHECK(rig.http.sent.empty());
}

TEST_CASE("engine registry: a destination created late in the grace, not yet read here, still gets the row") {
  const key_file k;
  engine_rig rig([&](auto& env) {
    env["OUTBOX_SEALING_KEY_FILE"] = k.path.string();
    env["OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS"] = "120";
    env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "600";  // no periodic re-read: only the row's own reads
  });
  rig.start();
  const auto t0 = rig.clock.system_now();
  const auto id = rig.enqueue(6, "Lead", "{}", "brand_late");
  REQUIRE(rig.run_until([&] { return rig.row(id).last_error.find("waits for it") != std::string::npos; }));
  // Created 115 s into the grace, its notification lost: nothing here has read it when the grace ends.
  (void)rig.run_until([&] { return rig.clock.system_now() - t0 >= 115s; }, 200s);
  rig.store.registry.push_back(webhook_entry(k, "brand_late", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  REQUIRE(rig.run_until([&] { return rig.row(id).state == "sent" || rig.row(id).state == "dead"; }, 120s));
  CHECK(rig.row(id).state == "sent");
}

TEST_CASE("engine registry: with no grace, a row is dead only once the registry was read after its insert") {
  const key_file k;
  engine_rig rig([&](auto& env) {
    env["OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS"] = "0";
    env["OUTBOX_SEALING_KEY_FILE"] = k.path.string();
  });
  rig.start();
  // Created in the same breath as the row (the CRM's transaction): no notification has been heard yet.
  rig.store.registry.push_back(webhook_entry(k, "brand_b", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  const auto id = rig.enqueue(3, "Lead", "{}", "brand_b");
  REQUIRE(rig.run_until_state(id, "sent", 60s));
  const auto gone = rig.enqueue(4, "Lead", "{}", "never_created");
  REQUIRE(rig.run_until_state(gone, "dead", 60s));
}

TEST_CASE("engine registry: a disabled or invalid entry holds its rows with the reason; the others go on") {
  const key_file k;
  engine_rig rig([&](auto& env) { env["OUTBOX_SEALING_KEY_FILE"] = k.path.string(); });
  auto disabled = webhook_entry(k, "paused_one", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  disabled.enabled = false;
  rig.store.registry.push_back(disabled);
  rig.store.registry.push_back(webhook_entry(k, "bad_url", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "ftp://x"));
  auto foreign = webhook_entry(k, "foreign_key", "x");
  foreign.secrets["secret"] = outbox::secrets::sealing_key::generate().seal("x", "webhook/foreign_key/secret");
  rig.store.registry.push_back(foreign);
  rig.start();
  const auto a = rig.enqueue(5, "Lead", "{}", "paused_one");
  const auto b = rig.enqueue(6, "Lead", "{}", "bad_url");
  const auto c = rig.enqueue(7, "Lead", "{}", "foreign_key");
  const auto ok = rig.enqueue(8);
  REQUIRE(rig.run_until_state(ok, "sent"));
  (void)rig.run_until([] { return false; }, 900s);  // past the unknown destinations' grace: these are known
  for (const auto id : {a, b, c}) {
    CAPTURE(id);
    CHECK(rig.row(id).state == "pending");
    CHECK(rig.row(id).attempts == 0);
  }
  const std::string logs = rig.logs();
  CHECK(logs.find("disabled in the registry") != std::string::npos);
  CHECK(logs.find("url: ") != std::string::npos);
  CHECK(logs.find("secret: cannot be opened: sealed for key") != std::string::npos);
  CHECK(rig.http.sent.size() == 1);
  // Enabled again: its row goes.
  rig.store.registry[0].enabled = true;
  registry_changed(rig);
  REQUIRE(rig.run_until_state(a, "sent", 120s));
}

TEST_CASE("engine registry: a secret changed in the registry signs the next request; removal makes rows wait") {
  const key_file k;
  const std::string first = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string second = "whsec_c2Vjb25kc2VjcmV0c2Vjb25kc2VjcmV0";
  engine_rig rig([&](auto& env) { env["OUTBOX_SEALING_KEY_FILE"] = k.path.string(); });
  rig.store.registry.push_back(webhook_entry(k, "brand_c", first));
  rig.start();
  const auto one = rig.enqueue(9, "Lead", "{}", "brand_c");
  REQUIRE(rig.run_until_state(one, "sent"));
  rig.store.registry[0] = webhook_entry(k, "brand_c", second);
  registry_changed(rig);
  REQUIRE(rig.run_until([&] { return rig.logs().find("destination changed in the registry") != std::string::npos; }));
  const auto two = rig.enqueue(10, "Lead", "{}", "brand_c");
  REQUIRE(rig.run_until_state(two, "sent"));
  REQUIRE(rig.http.sent.size() == 2);
  CHECK(header(rig.http.sent[0].request, "webhook-signature") == signature(rig.http.sent[0].request, first));
  CHECK(header(rig.http.sent[1].request, "webhook-signature") == signature(rig.http.sent[1].request, second));
  // Removed: a new row waits (the grace period), nothing is sent.
  rig.store.registry.clear();
  registry_changed(rig);
  REQUIRE(rig.run_until([&] { return rig.logs().find("destination removed from the registry") != std::string::npos; }));
  const auto three = rig.enqueue(11, "Lead", "{}", "brand_c");
  (void)rig.run_until([] { return false; }, 60s);
  CHECK(rig.row(three).state == "pending");
  CHECK(rig.http.sent.size() == 2);
}

TEST_CASE("engine registry: a notification naming entries reads those alone, whatever the registry's size") {
  const key_file k;
  const std::string first = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string second = "whsec_c2Vjb25kc2VjcmV0c2Vjb25kc2VjcmV0";
  engine_rig rig([&](auto& env) {
    env["OUTBOX_SEALING_KEY_FILE"] = k.path.string();
    env["OUTBOX_WAKE_MODE"] = "listen";
    env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "600";  // no periodic re-read of the whole registry in this test
  });
  for (const std::string name : {"brand_e", "brand_f", "brand_g"})
    rig.store.registry.push_back(webhook_entry(k, name, first));
  rig.start();
  const auto whole_reads = rig.store.calls("read_registry");
  // brand_e's secret changes, brand_f goes, brand_h comes: as sql/0012's trigger names them.
  rig.store.registry[0] = webhook_entry(k, "brand_e", second, "https://brand-e.test/hook");
  rig.store.registry.erase(rig.store.registry.begin() + 1);
  rig.store.registry.push_back(webhook_entry(k, "brand_h", first));
  for (const std::string name : {"brand_e", "brand_f", "brand_h"})
    rig.store.notify(std::string{outbox::db::destination_changed_prefix} + "webhook/" + name);
  REQUIRE(rig.run_until(
      [&] {
        return rig.logs().find("destination added from the registry\",\"destination\":\"webhook/brand_h") !=
               std::string::npos;
      },
      10s));
  CHECK(rig.logs().find("destination removed from the registry") != std::string::npos);
  CHECK(rig.store.calls("read_registry") == whole_reads);  // the three entries alone were read
  const auto e = rig.enqueue(20, "Lead", "{}", "brand_e");
  const auto g = rig.enqueue(21, "Lead", "{}", "brand_g");
  const auto h = rig.enqueue(22, "Lead", "{}", "brand_h");
  const auto f = rig.enqueue(23, "Lead", "{}", "brand_f");
  REQUIRE(rig.run_until(
      [&] { return rig.row(e).state == "sent" && rig.row(g).state == "sent" && rig.row(h).state == "sent"; }, 30s));
  CHECK(rig.row(f).state == "pending");  // removed: it waits
  for (const auto& s : rig.http.sent) {
    const bool to_e = s.request.url == "https://brand-e.test/hook";
    CHECK(header(s.request, "webhook-signature") == signature(s.request, to_e ? second : first));
  }
  CHECK(rig.store.calls("read_registry") == whole_reads);  // brand_f's row asked for its entry alone
}

TEST_CASE("engine registry: an on-call pause holds a destination that was disabled and enabled again") {
  const key_file k;
  engine_rig rig([&](auto& env) { env["OUTBOX_SEALING_KEY_FILE"] = k.path.string(); });
  rig.store.registry.push_back(webhook_entry(k, "brand_d", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  rig.store.pause("webhook", "brand_d", "maintenance", "alice@ops");
  rig.start();
  rig.store.registry[0].enabled = false;
  registry_changed(rig);
  REQUIRE(rig.run_until([&] { return rig.logs().find("disabled in the registry") != std::string::npos; }));
  rig.store.registry[0].enabled = true;
  registry_changed(rig);
  REQUIRE(rig.run_until([&] { return rig.logs().find("destination added from the registry") != std::string::npos; }));
  const auto held = rig.enqueue(12, "Lead", "{}", "brand_d");
  (void)rig.run_until([] { return false; }, 30s);
  CHECK(rig.row(held).state == "pending");  // the on-call pause still holds it
  CHECK(rig.http.sent.empty());
}

TEST_CASE("engine registry: reads lost with their connection keep the destinations; the change lands once read") {
  const key_file k;
  engine_rig rig([&](auto& env) {
    env["OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS"] = "0";  // the strictest: dead as soon as a read says so
    env["OUTBOX_SEALING_KEY_FILE"] = k.path.string();
  });
  rig.store.registry.push_back(webhook_entry(k, "brand_f", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  rig.start();
  const auto before = rig.enqueue(1, "Lead", "{}", "brand_f");
  REQUIRE(rig.run_until_state(before, "sent"));

  // The next two reads of each kind (the whole registry, the entries a row or a
  // notification names) die with their connection; meanwhile the CRM creates brand_g and enqueues for it.
  for (const std::string op : {"read_registry", "read_registry", "read_registry_entries", "read_registry_entries"})
    rig.store.fail_next({op});
  const auto reads_so_far = [&] { return rig.store.calls("read_registry") + rig.store.calls("read_registry_entries"); };
  rig.store.registry.push_back(
      webhook_entry(k, "brand_g", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "https://registry.test/g"));
  const int reads = reads_so_far();
  registry_changed(rig);
  const auto after_change = rig.enqueue(2, "Lead", "{}", "brand_g");
  const auto known = rig.enqueue(3, "Lead", "{}", "brand_f");
  // brand_f, known before the lost reads, goes on; brand_g's row waits, never dead, and goes once a read lands.
  REQUIRE(rig.run_until_state(known, "sent"));
  REQUIRE(rig.run_until_state(after_change, "sent", 120s));
  CHECK(reads_so_far() >= reads + 3);  // two lost, then one that landed
  CHECK(rig.logs().find("destination registry not read; keeping the destinations as they are") != std::string::npos);
  std::size_t to_g = 0;
  for (const auto& sent : rig.http.sent) to_g += sent.request.url == "https://registry.test/g" ? 1 : 0;
  CHECK(to_g == 1);
  CHECK(rig.http.sent.size() == 3);
  CHECK(rig.row(after_change).attempts == 1);
}

}  // namespace engine_registry_test

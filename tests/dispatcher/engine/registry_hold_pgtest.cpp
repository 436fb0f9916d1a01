// A destination that holds reclaimed rows (Meta's ON_EXPIRED_LEASE=hold) needs
// claims that wait for their WAL flush: after a crash, a row whose request may
// have gone out must be found in `sending` (held for on-call), not pending as if
// new. When the registry adds one while the engine runs, the claim connection,
// opened without that wait, is replaced before the next claim.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "dispatcher/secrets/sealing_keyring.hpp"
#include "providers/crypto.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace registry_hold_pgtest {

using namespace std::chrono_literals;
using outbox::test::engine_harness;

namespace {

// The backend of the engine's claim connection; 0 when there is none.
long long claim_backend(const outbox::test::scratch_database& db) {
  const auto r = db.query(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
      "AND application_name = 'outbox-dispatcher claim'");
  return r.rows() == 1 ? std::stoll(std::string(r.text(0, 0))) : 0;
}

}  // namespace

TEST_CASE("engine: a hold destination added to the registry replaces the claim connection before the next claim") {
  const outbox::test::scratch_dir dir;
  const auto key = outbox::secrets::sealing_key::generate();
  const std::string key_file = (dir.path / "sealing.pem").string();
  std::ofstream(key_file) << key.private_pem();
  engine_harness h([&](auto& env) { env["OUTBOX_SEALING_KEY_FILE"] = key_file; });
  h.db.query("INSERT INTO outbox_sealing_key (key_id, public_key, is_current) VALUES ($1, decode($2, 'hex'), true)",
             {key.id(), outbox::providers::hex_encode(key.public_raw())});
  h.start();
  const auto first = h.enqueue(1, "Lead");
  REQUIRE(h.wait_state(first, "sent"));
  const long long before = claim_backend(h.db);
  REQUIRE(before != 0);

  const nlohmann::json settings{{"pixel_id", "1234567890"}, {"on_expired_lease", "hold"}};
  const nlohmann::json secrets{
      {"access_token", key.seal("meta-token", outbox::secrets::secret_context("meta", "project_9", "access_token"))}};
  h.db.query("INSERT INTO outbox_destination (provider, name, settings, secrets) VALUES ('meta', 'project_9', $1, $2)",
             {settings.dump(), secrets.dump()});
  REQUIRE(h.wait_for([&] { return h.logs().find("destination added from the registry") != std::string::npos; }, 15s));
  // A row after the change is claimed on a new connection (its session waits for the flush).
  const auto second = h.enqueue(2, "Lead");
  REQUIRE(h.wait_state(second, "sent"));
  const long long after = claim_backend(h.db);
  CHECK(after != 0);
  CHECK(after != before);
  h.stop();
}

}  // namespace registry_hold_pgtest

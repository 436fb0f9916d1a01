// `dispatcher keys` and `dispatcher destination`: destinations kept in the
// database are checked as the environment's are, their secrets are read from a
// file (never the command line) and stored sealed for the published key, and
// one with rows still waiting is not removed by accident.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dispatcher/secrets/sealing_keyring.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace destination_registry_e2e {

using outbox::test::e2e_fixture;
using outbox::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

std::string sealed_secret(const e2e_fixture& fx, const std::string& name) {
  const auto r =
      fx.db.query("SELECT secrets->>'secret' FROM outbox_destination WHERE provider = 'webhook' AND name = $1", {name});
  return r.rows() == 1 ? std::string(r.text(0, 0)) : std::string{};
}

}  // namespace

TEST_CASE("destination set: checked as the environment's; a secret only from a file, stored sealed") {
  e2e_fixture fx;
  const scratch_dir dir;
  const std::string key_file = (dir.path / "sealing.pem").string();
  const std::string token = "whsec_cmVnaXN0cnlzZWNyZXQ=";
  const std::string secret_file = (dir.path / "secret").string();
  std::ofstream(secret_file) << token << "\n";

  auto r = fx.cli({"keys", "generate", key_file});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK((fs::status(key_file).permissions() & fs::perms::group_all) == fs::perms::none);
  r = fx.cli({"keys", "generate", key_file});
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("never overwritten") != std::string::npos);

  // Nothing to seal for: refused before anything is stored.
  r = fx.cli({"destination", "set", "webhook", "brand_a", "URL=https://hooks.example.com/a", "--secret",
              "SECRET=@" + secret_file});
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("no sealing key is published") != std::string::npos);
  r = fx.cli({"keys", "publish"}, {{"OUTBOX_SEALING_KEY_FILE", key_file}});
  REQUIRE(r.exit_code == 0);
  const auto ring = outbox::secrets::load_keyring({key_file});
  CHECK(fx.cli({"keys", "list"}).output.find(ring.current()->id() + "  published") != std::string::npos);

  // On the command line, a secret is refused (it would stay in the shell's history).
  r = fx.cli({"destination", "set", "webhook", "brand_a", "URL=https://hooks.example.com/a", "SECRET=" + token});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("secret is a secret: give it with --secret secret=@FILE") != std::string::npos);
  // Checked by the environment's rules: a bad URL and an unknown key, nothing stored.
  r = fx.cli({"destination", "set", "webhook", "brand_a", "URL=ftp://x", "COLOUR=blue"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("url: ") != std::string::npos);
  CHECK(r.output.find("colour: unknown setting \"colour\" for a webhook destination") != std::string::npos);
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_destination") == 0);

  r = fx.cli({"destination", "set", "webhook", "brand_a", "URL=https://hooks.example.com/a", "CONCURRENCY=4",
              "HEADER__X_TENANT=acme", "--secret", "SECRET=@" + secret_file});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("webhook/brand_a created") != std::string::npos);
  const std::string sealed = sealed_secret(fx, "brand_a");
  CHECK(sealed.starts_with("sealed:v1:" + ring.current()->id() + ":"));
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_destination WHERE (settings::text || secrets::text) LIKE $1",
                     {"%" + token.substr(6, 12) + "%"}) == 0);
  CHECK(ring.open(sealed, "webhook/brand_a/secret").value == token);  // the newline of the file dropped
  CHECK(fx.db.query("SELECT settings->>'header__x-tenant' FROM outbox_destination").text(0, 0) == "acme");

  // A change keeps what it does not name; the sealed secret stays as it was.
  r = fx.cli({"destination", "set", "webhook", "brand_a", "CONCURRENCY=", "RATE_PER_SECOND=5", "--disable"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("webhook/brand_a updated") != std::string::npos);
  CHECK(sealed_secret(fx, "brand_a") == sealed);
  const auto shown = nlohmann::json::parse(fx.cli({"destination", "show", "webhook", "brand_a", "--json"}).output);
  CHECK(shown["enabled"] == false);
  CHECK(shown["settings"] ==
        nlohmann::json{{"header__x-tenant", "acme"}, {"rate_per_second", "5"}, {"url", "https://hooks.example.com/a"}});
  CHECK(shown["secrets"]["secret"] == "*** (sealed for key " + ring.current()->id() + ")");
  CHECK(shown["problems"].empty());
  CHECK(shown["updated_by"].get<std::string>().find('@') != std::string::npos);
  const std::string listed = fx.cli({"destination", "list"}).output;
  CHECK(listed.find("webhook/brand_a  disabled  3 settings, 1 secrets") != std::string::npos);
  CHECK(listed.find(token) == std::string::npos);
}

TEST_CASE("destination remove: refused while rows wait for it, unless forced; --dry-run changes nothing") {
  e2e_fixture fx;
  REQUIRE(fx.cli({"destination", "set", "webhook", "brand_b", "URL=https://hooks.example.com/b"}).exit_code == 0);
  fx.db.query("SELECT enqueue_event_delivery(7, 'webhook', 'Lead', '{}'::jsonb, 'brand_b')");

  auto r = fx.cli({"destination", "remove", "webhook", "brand_b"});
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("refused: 1 row(s) are still pending or sending for webhook/brand_b") != std::string::npos);
  r = fx.cli({"destination", "remove", "webhook", "brand_b", "--force", "--dry-run"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("would be removed (1 row(s) not final for it)") != std::string::npos);
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_destination") == 1);
  r = fx.cli({"destination", "remove", "webhook", "brand_b", "--force"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("webhook/brand_b removed (1 row(s) not final for it: they wait for a destination of that name") !=
        std::string::npos);
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_destination") == 0);
  CHECK(fx.cli({"destination", "remove", "webhook", "brand_b"}).exit_code == 1);
}

}  // namespace destination_registry_e2e

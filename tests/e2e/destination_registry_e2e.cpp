// `dispatcher keys` and `dispatcher destination`: destinations kept in the
// database are checked as the environment's are, their secrets are read from a
// file (never the command line) and stored sealed for the published key, and
// one with rows still waiting is not removed by accident.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "dispatcher/secrets/sealing_keyring.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/pg_dump.hpp"

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

// Sets webhook/NAME with a secret read from a file of `dir`.
void set_with_secret(e2e_fixture& fx, const scratch_dir& dir, const std::string& name, const std::string& token) {
  const std::string file = (dir.path / ("secret_" + name)).string();
  std::ofstream(file) << token;
  const auto r = fx.cli(
      {"destination", "set", "webhook", name, "URL=https://hooks.example.com/" + name, "--secret", "SECRET=@" + file});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("keys reseal: a rotation moves every secret to the new key; a dump never holds one in clear") {
  e2e_fixture fx;
  const scratch_dir dir;
  const std::string old_key = (dir.path / "old.pem").string();
  const std::string new_key = (dir.path / "new.pem").string();
  REQUIRE(fx.cli({"keys", "generate", old_key}).exit_code == 0);
  REQUIRE(fx.cli({"keys", "publish", "--key-file", old_key}).exit_code == 0);
  const std::map<std::string, std::string> tokens{{"brand_c", "whsec_Y2NjY2NjY2NjY2Nj"},
                                                  {"brand_d", "whsec_ZGRkZGRkZGRkZGRk"}};
  for (const auto& [name, token] : tokens) set_with_secret(fx, dir, name, token);
  const auto secret_in = [&](const std::string& text) {
    return text.find("Y2NjY2NjY2Nj") != std::string::npos || text.find("ZGRkZGRkZGRk") != std::string::npos;
  };
  const std::string dump = outbox::test::pg_dump_of(fx.db, dir);
  CHECK(dump.find("https://hooks.example.com/brand_c") != std::string::npos);  // the dump has the registry
  CHECK_FALSE(secret_in(dump));

  REQUIRE(fx.cli({"keys", "generate", new_key}).exit_code == 0);
  const outbox::environment both{{"OUTBOX_SEALING_KEY_FILE", new_key}, {"OUTBOX_SEALING_KEY_FILE_PREVIOUS", old_key}};
  // The new key is not published yet: resealing for it would split the registry's keys.
  auto r = fx.cli({"keys", "reseal"}, both);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("run `dispatcher keys publish` first") != std::string::npos);
  REQUIRE(fx.cli({"keys", "publish", "--key-file", new_key}).exit_code == 0);
  const auto ring = outbox::secrets::load_keyring({new_key, old_key});
  const std::string old_id = ring.keys()[1].id();
  const std::string new_id = ring.current()->id();

  // Without the previous file, no secret opens: each is named, none is touched.
  r = fx.cli({"keys", "reseal"}, {{"OUTBOX_SEALING_KEY_FILE", new_key}});
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("webhook/brand_c secret: ") != std::string::npos);
  CHECK(r.output.find("2 secret(s) left as they are") != std::string::npos);
  r = fx.cli({"keys", "reseal", "--dry-run"}, both);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("would reseal 2 secret(s) in 2 destination(s) for key " + new_id) != std::string::npos);
  CHECK(sealed_secret(fx, "brand_c").starts_with("sealed:v1:" + old_id + ":"));

  r = fx.cli({"keys", "reseal"}, both);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("resealed 2 secret(s) in 2 destination(s)") != std::string::npos);
  for (const auto& [name, token] : tokens) {
    const std::string sealed = sealed_secret(fx, name);
    CHECK(sealed.starts_with("sealed:v1:" + new_id + ":"));
    CHECK(ring.open(sealed, "webhook/" + name + "/secret").value == token);
  }
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_destination WHERE updated_by = 'dispatcher keys reseal'") == 2);
  r = fx.cli({"keys", "reseal"}, {{"OUTBOX_SEALING_KEY_FILE", new_key}});  // the previous file is no longer needed
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("resealed 0 secret(s) in 0 destination(s) for key " + new_id + "; 2 already sealed for it") !=
        std::string::npos);
  CHECK_FALSE(secret_in(outbox::test::pg_dump_of(fx.db, dir)));
}

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

TEST_CASE("dispatcher config --registry: the environment's destination wins; each entry used, ignored or why not") {
  e2e_fixture fx;
  const scratch_dir dir;
  const std::string key_file = (dir.path / "sealing.pem").string();
  REQUIRE(fx.cli({"keys", "generate", key_file}).exit_code == 0);
  REQUIRE(fx.cli({"keys", "publish", "--key-file", key_file}).exit_code == 0);
  set_with_secret(fx, dir, "brand_e", "whsec_ZWVlZWVlZWVlZWVl");
  // The environment defines webhook/default too; a hand-written entry has a URL no check would let in.
  REQUIRE(fx.cli({"destination", "set", "webhook", "default", "URL=https://hooks.example.com/registry"}).exit_code ==
          0);
  fx.db.query(
      "INSERT INTO outbox_destination (provider, name, settings) VALUES ('webhook', 'broken', "
      "'{\"url\": \"ftp://hooks.example.com\"}')");
  const outbox::environment with_key{{"OUTBOX_SEALING_KEY_FILE", key_file}};

  auto r = fx.cli({"config"}, with_key);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("# the registry's destinations (outbox_destination) are added at run time; where one has the "
                      "provider and name of a destination of the environment or the file, the environment's wins") !=
        std::string::npos);
  r = fx.cli({"config", "--registry"}, with_key);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("registry webhook/brand_e: used\n") != std::string::npos);
  CHECK(r.output.find("registry webhook/default: ignored: the environment defines webhook/default\n") !=
        std::string::npos);
  CHECK(r.output.find("registry webhook/broken: not usable: url: ") != std::string::npos);
  CHECK(r.output.find("OUTBOX_DEST__WEBHOOK__DEFAULT__URL=") != std::string::npos);  // the effective settings first

  // Without the key file, the entry with a secret is not usable, and says why.
  r = fx.cli({"config", "--registry", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  std::map<std::string, std::string> use;
  for (const auto& e : j["registry"]) use[e["destination"].get<std::string>()] = e["use"].get<std::string>();
  CHECK(use.size() == 3);
  CHECK(use["brand_e"].starts_with("not usable: secret: cannot be opened: no sealing key is configured"));
  CHECK(use["default"] == "ignored: the environment defines webhook/default");
  CHECK(j["registry_rule"].get<std::string>().find("the environment's wins") != std::string::npos);
}

}  // namespace destination_registry_e2e

// Sealed destination secrets: what seals opens only with the dispatcher's key,
// under the same context, unaltered; the Django package's Python sealing and
// this one open each other's values.
#include "dispatcher/secrets/sealed_secret.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "dispatcher/config/config.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"
#include "providers/crypto.hpp"
#include "tests/support/python_process.hpp"

namespace sealed_secret_test {

using namespace std::chrono_literals;
using outbox::secrets::sealing_key;
using outbox::secrets::sealing_keyring;

namespace {

const std::string source_dir = OUTBOX_SOURCE_DIR;

// Runs Python with the Django package's sealing module importable; its stdout.
std::string python(const std::string& code) {
  const auto r = outbox::test::run_python({"-c", code}, {{"PYTHONPATH", source_dir + "/examples/django"}}, 60s);
  INFO(r.command << "\n" << r.err);
  REQUIRE_MESSAGE(r.exit_code == 0, "python3 with python3-cryptography is needed (scripts/setup.sh installs it)");
  return r.out;
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()));
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("sealed secret: opens with its key and context only") {
  const auto key = sealing_key::generate();
  const std::string sealed = key.seal("EAAB-token", "meta/project_17/access_token");
  CHECK(sealed.starts_with("sealed:v1:" + key.id() + ":"));
  CHECK(sealed.find("EAAB-token") == std::string::npos);
  CHECK(key.open(sealed, "meta/project_17/access_token").value == "EAAB-token");
  // Random per seal: the same secret twice gives two values.
  CHECK(key.seal("EAAB-token", "c") != key.seal("EAAB-token", "c"));

  const auto moved = key.open(sealed, "meta/project_18/access_token");
  CHECK_FALSE(moved.value.has_value());
  CHECK(moved.problem == "does not open: altered, or sealed for another destination or key");

  // One bit flipped in the ciphertext, the nonce or the ephemeral key: it does not open.
  const std::string head = "sealed:v1:" + key.id() + ":";
  for (const std::size_t at : {std::size_t{0}, std::size_t{40}, std::size_t{50}}) {
    std::string blob = *outbox::providers::base64_decode(sealed.substr(head.size()));
    blob[at] = static_cast<char>(blob[at] ^ 1);
    CHECK_FALSE(key.open(head + outbox::providers::base64_encode(blob), "meta/project_17/access_token").value);
  }

  const auto other = sealing_key::generate();
  CHECK(other.open(sealed, "meta/project_17/access_token").problem ==
        "sealed for key " + key.id() + ", not key " + other.id());
  CHECK(key.open("EAAB-token", "c").problem == "not a sealed value (sealed:v1:...)");
  CHECK(key.open("sealed:v1:" + key.id() + ":AAAA", "c").problem == "a damaged sealed value");
  CHECK(key.open("sealed:v1:" + key.id() + ":not base64!", "c").problem == "a damaged sealed value");
}

TEST_CASE("sealed secret: the public key seals but cannot open; the PEM round-trips") {
  const auto key = sealing_key::generate();
  const auto public_only = sealing_key::from_public_raw(key.public_raw());
  CHECK(public_only.id() == key.id());
  CHECK_FALSE(public_only.has_private());
  const std::string sealed = public_only.seal("whsec_abc", "webhook/default/secret");
  CHECK(public_only.open(sealed, "webhook/default/secret").problem == "only the public key is here");
  const auto reread = sealing_key::from_private_pem(key.private_pem());
  CHECK(reread.id() == key.id());
  CHECK(reread.open(sealed, "webhook/default/secret").value == "whsec_abc");
  CHECK(key.private_pem().starts_with("-----BEGIN PRIVATE KEY-----"));
  CHECK_THROWS_AS((void)sealing_key::from_private_pem("-----BEGIN PRIVATE KEY-----\nxx\n"), std::invalid_argument);
  CHECK_THROWS_AS((void)sealing_key::from_public_raw("short"), std::invalid_argument);
  CHECK(outbox::secrets::sealed_key_id(sealed) == key.id());
  CHECK_FALSE(outbox::secrets::is_sealed("sealed:v1:"));
}

TEST_CASE("sealed secret: a keyring opens what either key sealed and names the keys it holds") {
  auto current = sealing_key::generate();
  auto previous = sealing_key::generate();
  const std::string old_value = previous.seal("old", "c");
  const std::string new_value = current.seal("new", "c");
  const auto stranger = sealing_key::generate();
  const std::string foreign = stranger.seal("x", "c");
  const std::string current_id = current.id();
  const std::string previous_id = previous.id();
  std::vector<sealing_key> keys;
  keys.push_back(std::move(current));
  keys.push_back(std::move(previous));
  const sealing_keyring ring(std::move(keys));
  CHECK(ring.current()->id() == current_id);
  CHECK(ring.open(old_value, "c").value == "old");
  CHECK(ring.open(new_value, "c").value == "new");
  CHECK(ring.open(foreign, "c").problem == "sealed for key " + stranger.id() +
                                               ", which this dispatcher does not hold (it holds " + current_id + ", " +
                                               previous_id + ")");
  CHECK(sealing_keyring{}.open(foreign, "c").problem.ends_with("(no sealing key is configured)"));
}

TEST_CASE("sealed secret: key files are read, and a bad one is named") {
  const auto key = sealing_key::generate();
  const auto good = write_temp("sealing_good", key.private_pem());
  const auto bad = write_temp("sealing_bad", "not a key\n");
  const auto ring = outbox::secrets::load_keyring({good, ""});
  REQUIRE(ring.keys().size() == 1);
  CHECK(ring.current()->id() == key.id());
  CHECK_THROWS_WITH_AS(
      (void)outbox::secrets::load_keyring({good, bad}),
      ("sealing key file " + bad.string() + ": not an X25519 private key in PEM (PKCS#8) form").c_str(),
      std::runtime_error);
  CHECK_THROWS_WITH_AS((void)outbox::secrets::load_keyring({"/nonexistent/key.pem"}),
                       "sealing key file /nonexistent/key.pem: cannot be read", std::runtime_error);
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST_CASE("sealed secret: the Django package's Python seals what this opens, and opens what this seals") {
  const auto key = sealing_key::generate();
  const std::string public_b64 = outbox::providers::base64_encode(key.public_raw());
  const std::string by_python = python(
      "import base64; from outbox_events.sealing import seal, key_id\n"
      "raw = base64.b64decode('" +
      public_b64 +
      "')\n"
      "assert key_id(raw) == '" +
      key.id() +
      "'\n"
      "print(seal(raw, 'token-\u00e9', 'tiktok/brand_a/access_token'), end='')\n");
  CHECK(key.open(by_python, "tiktok/brand_a/access_token").value == "token-\u00e9");
  CHECK_FALSE(key.open(by_python, "tiktok/brand_b/access_token").value.has_value());

  const auto pem = write_temp("sealing_pem", key.private_pem());
  const std::string sealed = key.seal("s3cret", "google_ads/default/refresh_token");
  CHECK(python("from outbox_events.sealing import open_sealed\n"
               "print(open_sealed(open('" +
               pem.string() + "', 'rb').read(), '" + sealed + "', 'google_ads/default/refresh_token'), end='')\n") ==
        "s3cret");
  std::filesystem::remove(pem);
}

TEST_CASE("the Django package's set_destination knows the dispatcher's keys and secrets, no more, no fewer") {
  const auto listed = nlohmann::json::parse(
      python("import json; from outbox_events.destinations import PROVIDER_KEYS, COMMON_KEYS, is_secret_key\n"
             "keys = {p: sorted(k) for p, k in PROVIDER_KEYS.items()}\n"
             "keys['*'] = sorted(COMMON_KEYS)\n"
             "keys['secret'] = sorted(k for ks in PROVIDER_KEYS.values() for k in ks if is_secret_key(k))\n"
             "print(json.dumps(keys))\n"));
  std::set<std::string> secrets;
  for (const auto& kind : outbox::provider_kinds()) {
    CAPTURE(kind.kind);
    std::vector<std::string> keys(kind.setting_keys.begin(), kind.setting_keys.end());
    std::sort(keys.begin(), keys.end());
    CHECK(listed[std::string{kind.kind}] == keys);
    for (const auto& k : keys) {
      if (outbox::is_secret_setting(k)) secrets.insert(k);
    }
  }
  CHECK(listed["secret"].get<std::set<std::string>>() == secrets);
  CHECK(listed.size() == outbox::provider_kinds().size() + 2);
}

}  // namespace sealed_secret_test

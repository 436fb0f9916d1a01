// The image's binary, run as the image lays it out (issue 26): the stripped
// Release `dispatcher` that scripts/build_image.sh built with the Dockerfile's
// own commands, in <root>/usr/local/bin/, its user data module in
// <root>/usr/local/lib/dispatcher/. `--version`, `migrate` on an empty
// database, one row to each provider's protocol fake (the Meta row with user
// data, so the module loads), /readyz, SIGTERM, exit 0. Where a Docker engine
// answers, scripts/image_smoke.sh builds the image and runs this test on the
// files copied out of it (OUTBOX_IMAGE_ROOT).
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "providers/crypto.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/dockerfile.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/external_tool.hpp"
#include "tests/support/fake_google.hpp"
#include "tests/support/fake_meta.hpp"
#include "tests/support/fake_tiktok.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace image_smoke_e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::eventually;

namespace {

const std::filesystem::path build_exe{OUTBOX_DISPATCHER_EXE};

// scripts/test.sh sets it: there the build directory must hold the image's build.
bool image_build_required() { return std::getenv("OUTBOX_REQUIRE_IMAGE_BUILD") != nullptr; }

bool stripped(const std::filesystem::path& file) {
  const auto r = outbox::test::run_tool({"/usr/bin/readelf", "-S", "-W", file.string()}, 10s);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return r.out.find(".symtab") == std::string::npos;
}

// /usr/local/bin/dispatcher and /usr/local/lib/dispatcher/dispatcher-user-data.so under a scratch root;
// OUTBOX_IMAGE_ROOT names a root that holds them already (scripts/image_smoke.sh: copied out of the image).
std::filesystem::path install_as_the_image(const std::filesystem::path& root) {
  if (const char* image_root = std::getenv("OUTBOX_IMAGE_ROOT")) {
    std::filesystem::copy(image_root, root, std::filesystem::copy_options::recursive);
    return root / "usr" / "local" / "bin" / "dispatcher";
  }
  const auto bin = root / "usr" / "local" / "bin";
  const auto lib = root / "usr" / "local" / "lib" / "dispatcher";
  std::filesystem::create_directories(bin);
  std::filesystem::create_directories(lib);
  std::filesystem::copy_file(build_exe, bin / "dispatcher");
  std::filesystem::copy_file(build_exe.parent_path() / "dispatcher-user-data.so", lib / "dispatcher-user-data.so");
  return bin / "dispatcher";
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Meta, TikTok and both Google APIs on their fakes; the webhook on the fixture's server.
outbox::environment every_provider(const outbox::test::e2e_fixture& fx, const outbox::test::fake_google& google) {
  const std::string url = fx.env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  const std::string base = url.substr(0, url.rfind('/'));
  outbox::environment env{{"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", "1234567890"},
                          {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", "meta-good-token"},
                          {"OUTBOX_DEST__META__DEFAULT__BASE_URL", base},
                          {"OUTBOX_DEST__TIKTOK__DEFAULT__ACCESS_TOKEN", "tiktok-good-token"},
                          {"OUTBOX_DEST__TIKTOK__DEFAULT__EVENT_SOURCE_ID", "CRMEVENTSET1"},
                          {"OUTBOX_DEST__TIKTOK__DEFAULT__BASE_URL", base}};
  for (const auto* provider : {"GOOGLE_ADS", "GOOGLE_DATA_MANAGER"}) {
    for (auto& [k, v] : google.destination_settings(provider)) env[k] = v;
  }
  return env;
}

}  // namespace

TEST_CASE(
    "image smoke: the stripped Release binary, laid out as in the image, migrates, delivers to every provider "
    "and stops on SIGTERM with exit 0") {
  const bool is_stripped = stripped(build_exe);
  if (image_build_required()) {
    REQUIRE_MESSAGE(is_stripped, build_exe << " is not stripped: scripts/build_image.sh did not build this directory");
  } else if (!is_stripped) {
    MESSAGE("smoke test on an unstripped developer build; scripts/test.sh runs it on the image's build");
  }
  outbox::test::e2e_fixture fx;
  const outbox::test::fake_meta meta;
  const outbox::test::fake_tiktok tiktok;
  const outbox::test::fake_google google(fx.pki.trusted);
  fx.server.set_fallback([m = meta.make_responder(), t = tiktok.make_responder()](const auto& request) {
    if (request.target.starts_with("/open_api/")) return t(request);
    if (request.target == "/hook") return outbox::test::response_plan::reply(200);
    return m(request);
  });
  const auto root = outbox::test::make_temp_dir("outbox-image-root");
  const auto exe = install_as_the_image(root);

  const auto version =
      outbox::test::run_child({exe.string(), "--version"}, outbox::test::child_environment({}), 10s, root);
  MESSAGE("$ dispatcher --version\n" << version.out);
  CHECK(version.exit_code == 0);
  CHECK(
      std::regex_search(version.out, std::regex(R"(^dispatcher \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n$)")));

  // `migrate` on an empty database, as a first deployment runs it.
  const outbox::test::scratch_database empty(false);
  auto env = fx.env;
  env["DATABASE_URL"] = empty.conninfo();
  const auto migrate =
      outbox::test::run_child({exe.string(), "migrate"}, outbox::test::child_environment(env), 60s, root);
  MESSAGE("$ dispatcher migrate\n" << migrate.out << migrate.err);
  REQUIRE(migrate.exit_code == 0);
  REQUIRE(empty.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'event_delivery'") == 1);

  const auto port = outbox::test::free_local_port();
  // The image's ENV (GNUTLS_NO_IMPLICIT_INIT among them), then this test's settings.
  for (const auto& [k, v] : outbox::test::image_environment(
           outbox::test::read_whole_file(std::filesystem::path(OUTBOX_SOURCE_DIR) / "Dockerfile")))
    env.try_emplace(k, v);
  for (auto& [k, v] : every_provider(fx, google)) env[k] = v;
  env["OUTBOX_METRICS_ADDRESS"] = "127.0.0.1:" + std::to_string(port);
  outbox::test::dispatcher_process d({"run"}, env, "image-dispatcher", exe);
  const auto enqueue = [&](const std::string& provider, json payload) {
    payload["event_time"] = unix_now() - 60;
    empty.query("SELECT enqueue_event_delivery($1, $2, $3, $4::jsonb)", {"2601", provider, "Lead", payload.dump()});
  };
  enqueue("meta", {{"email", "Someone@Example.com"}, {"phone", "+1 650 253 0000"}});
  enqueue("tiktok", {{"email", "someone@example.com"}});
  enqueue("google_ads", {{"gclid", "G-2601"}});
  enqueue("google_data_manager", {{"gclid", "G-2601"}});
  enqueue("webhook", {{"value", 1}});
  const auto sent = [&] { return empty.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'"); };
  const auto rows = [&] {
    std::string out;
    const auto r = empty.query("SELECT provider, state, coalesce(last_error, '') FROM event_delivery ORDER BY id");
    for (int i = 0; i < r.rows(); ++i) {
      out += std::string(r.text(i, 0)) + " " + std::string(r.text(i, 1)) + " " + std::string(r.text(i, 2)) + "\n";
    }
    return out;
  };
  REQUIRE_MESSAGE(eventually([&] { return sent() == 5; }, 30s), d.describe() << "\n" << rows());

  CHECK(outbox::test::read_whole_file("/proc/" + std::to_string(d.pid()) + "/maps")
            .find((std::filesystem::canonical(root) / "usr/local/lib/dispatcher/dispatcher-user-data.so").string()) !=
        std::string::npos);
  REQUIRE(meta.accepted_events().size() == 1);
  CHECK(meta.accepted_events().at(0)["user_data"]["em"] ==
        json::array({outbox::providers::sha256_hex("someone@example.com")}));
  CHECK(meta.accepted_events().at(0)["user_data"]["ph"] == json::array({outbox::providers::sha256_hex("16502530000")}));
  CHECK(tiktok.accepted_events().size() == 1);
  CHECK(google.uploaded_conversions().size() == 1);
  CHECK(google.ingested_events().size() == 1);
  std::size_t hooks = 0;
  for (const auto& r : fx.server.requests()) hooks += r.target == "/hook" ? 1 : 0;
  CHECK(hooks == 1);

  const auto ready = outbox::test::http_get_local(port, "/readyz");
  MESSAGE("GET /readyz: " << ready.substr(0, ready.find("\r\n")));
  CHECK(ready.starts_with("HTTP/1.1 200"));

  d.signal(SIGTERM);
  const auto code = d.wait_exit(30s);
  INFO(d.describe());
  CHECK(code == 0);
  std::filesystem::remove_all(root);
}

}  // namespace image_smoke_e2e

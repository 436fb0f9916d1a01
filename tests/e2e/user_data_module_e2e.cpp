// The user data module (providers/user_data/user_data_module.hpp): the `dispatcher`
// executable does not link libphonenumber, protobuf or ICU's transliterator; it
// loads dispatcher-user-data.so at start when a destination hashes user data,
// never for webhooks only, and stops with a clear line when the file is missing.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "providers/crypto.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/external_tool.hpp"
#include "tests/support/fake_meta.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace user_data_module_e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

namespace {

const std::filesystem::path dispatcher_exe{OUTBOX_DISPATCHER_EXE};
const std::filesystem::path module_file = dispatcher_exe.parent_path() / "dispatcher-user-data.so";

// The shared libraries an ELF file names (readelf -d, from binutils).
std::string needed_libraries(const std::filesystem::path& file) {
  const auto r = outbox::test::run_tool({"/usr/bin/readelf", "-d", file.string()}, 10s);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::string needed;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.find("(NEEDED)") != std::string::npos) needed += line.substr(line.find('[')) + "\n";
  }
  return needed;
}

std::string mapped_files(pid_t pid) { return outbox::test::read_whole_file("/proc/" + std::to_string(pid) + "/maps"); }

// A lead as the CRM stores it: an event a minute old plus `fields`.
std::string lead(json fields) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  fields["event_time"] = std::chrono::duration_cast<std::chrono::seconds>(now).count() - 60;
  return fields.dump();
}

outbox::environment meta_destination(const e2e_fixture& fx) {
  const std::string url = fx.env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  return {{"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", "1234567890"},
          {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", "meta-good-token"},
          {"OUTBOX_DEST__META__DEFAULT__BASE_URL", url.substr(0, url.rfind('/'))}};
}

}  // namespace

TEST_CASE("the dispatcher executable leaves libphonenumber, protobuf and ICU to its user data module") {
  const auto exe_needs = needed_libraries(dispatcher_exe);
  INFO("dispatcher needs:\n" << exe_needs);
  CHECK(exe_needs.find("libpq") != std::string::npos);
  for (const auto* heavy : {"libphonenumber", "libprotobuf", "libicui18n", "libicuuc"}) {
    CHECK_MESSAGE(exe_needs.find(heavy) == std::string::npos, heavy);
  }
  REQUIRE(std::filesystem::exists(module_file));
  const auto module_needs = needed_libraries(module_file);
  INFO("module needs:\n" << module_needs);
  CHECK(module_needs.find("libphonenumber") != std::string::npos);
  CHECK(module_needs.find("libicui18n") != std::string::npos);
}

TEST_CASE("a webhook-only dispatcher never loads the user data module; with Meta it does, and hashes through it") {
  e2e_fixture fx;
  const outbox::test::fake_meta meta;
  auto& webhooks_only = fx.start_dispatcher({}, "webhooks");
  fx.enqueue(1301);
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == 1; }, 20s));
  const auto webhook_maps = mapped_files(webhooks_only.pid());
  REQUIRE(webhook_maps.find("libpq") != std::string::npos);  // the maps were read
  CHECK(webhook_maps.find("dispatcher-user-data.so") == std::string::npos);
  CHECK(webhook_maps.find("libphonenumber") == std::string::npos);
  CHECK(webhook_maps.find("libicui18n") == std::string::npos);
  CHECK(webhook_maps.find("libicuuc") == std::string::npos);
  webhooks_only.kill();

  meta.install(fx.server);
  auto& with_meta = fx.start_dispatcher(meta_destination(fx), "meta");
  // A national phone read in the row's country, and a country that is not ASCII
  // (ICU's transliterator folds it): both answered by the module.
  const auto id = fx.enqueue(1302, "Lead", lead({{"phone", "0532 123 45 67"}, {"country", "TÜRKİYE"}}), "meta");
  REQUIRE(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 20s));
  CHECK(mapped_files(with_meta.pid()).find("dispatcher-user-data.so") != std::string::npos);
  REQUIRE(meta.accepted_events().size() == 1);
  const auto user = meta.accepted_events().at(0)["user_data"];
  using outbox::providers::sha256_hex;
  CHECK(user["country"] == json::array({sha256_hex("tr")}));
  CHECK(user["ph"] == json::array({sha256_hex("905321234567")}));
}

TEST_CASE(
    "without its user data module, a dispatcher with a Meta destination exits 1 naming the file; webhooks need none") {
  e2e_fixture fx;
  const auto dir = outbox::test::make_temp_dir("outbox-no-module");
  const auto lone = dir / "dispatcher";
  std::filesystem::copy_file(dispatcher_exe, lone);
  std::filesystem::permissions(lone, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);

  auto env = outbox::test::child_environment(fx.env);
  for (auto& [k, v] : meta_destination(fx)) env[k] = v;
  const auto r = outbox::test::run_child({lone.string(), "run"}, env, 20s, dir);
  const std::string output = r.out + r.err;
  INFO(output);
  CHECK(r.exit_code == 1);
  CHECK(output.find("dispatcher-user-data.so") != std::string::npos);
  // Where it looked: beside the executable (as /proc/self/exe names it) and in ../lib/dispatcher/.
  const auto real_dir = std::filesystem::canonical(dir);
  CHECK(output.find((real_dir / "dispatcher-user-data.so").string()) != std::string::npos);
  CHECK(output.find((real_dir.parent_path() / "lib" / "dispatcher" / "dispatcher-user-data.so").string()) !=
        std::string::npos);
  CHECK(output.find("dispatcher starting") == std::string::npos);

  // The same copy with the webhook destination only runs and delivers.
  fx.enqueue(1401);
  const auto child = outbox::test::spawn_child({lone.string(), "run"}, outbox::test::child_environment(fx.env),
                                               dir / "webhooks.log", dir / "webhooks.log");
  CHECK(eventually([&] { return fx.count("state = 'sent'") == 1; }, 20s));
  outbox::test::kill_child(child.pid);
  if (child.pidfd >= 0) ::close(child.pidfd);
  INFO(outbox::test::read_whole_file(dir / "webhooks.log"));
  CHECK(fx.server.request_count() == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("installed as in the image, bin/dispatcher finds its module in lib/dispatcher/ and hashes with it") {
  e2e_fixture fx;
  const outbox::test::fake_meta meta;
  meta.install(fx.server);
  const auto root = outbox::test::make_temp_dir("outbox-installed");
  std::filesystem::create_directories(root / "bin");
  std::filesystem::create_directories(root / "lib" / "dispatcher");
  std::filesystem::copy_file(dispatcher_exe, root / "bin" / "dispatcher");
  std::filesystem::copy_file(module_file, root / "lib" / "dispatcher" / "dispatcher-user-data.so");

  auto env = outbox::test::child_environment(fx.env);
  for (auto& [k, v] : meta_destination(fx)) env[k] = v;
  const auto id = fx.enqueue(1501, "Lead", lead({{"email", "Someone@Example.com"}}), "meta");
  const auto log = root / "dispatcher.log";
  const auto child = outbox::test::spawn_child({(root / "bin" / "dispatcher").string(), "run"}, env, log, log);
  CHECK(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 20s));
  const auto maps = mapped_files(child.pid);
  outbox::test::kill_child(child.pid);
  if (child.pidfd >= 0) ::close(child.pidfd);
  INFO(outbox::test::read_whole_file(log));
  CHECK(maps.find((std::filesystem::canonical(root) / "lib" / "dispatcher" / "dispatcher-user-data.so").string()) !=
        std::string::npos);
  REQUIRE(meta.accepted_events().size() == 1);
  CHECK(meta.accepted_events().at(0)["user_data"]["em"] ==
        json::array({outbox::providers::sha256_hex("someone@example.com")}));
  std::filesystem::remove_all(root);
}

TEST_CASE("a module, or its folder, that group or others may write is refused before it is loaded") {
  e2e_fixture fx;
  const auto root = outbox::test::make_temp_dir("outbox-planted");
  std::filesystem::create_directories(root / "bin");
  std::filesystem::create_directories(root / "lib" / "dispatcher");
  std::filesystem::copy_file(dispatcher_exe, root / "bin" / "dispatcher");
  const auto module = root / "lib" / "dispatcher" / "dispatcher-user-data.so";
  std::filesystem::copy_file(module_file, module);
  auto env = outbox::test::child_environment(fx.env);
  for (auto& [k, v] : meta_destination(fx)) env[k] = v;
  using std::filesystem::perms;
  const auto refused = [&](const std::filesystem::path& writable) {
    const auto r = outbox::test::run_child({(root / "bin" / "dispatcher").string(), "run"}, env, 20s, root);
    const std::string output = r.out + r.err;
    INFO(output);
    CHECK(r.exit_code == 1);
    CHECK(output.find("refusing to load the user data module") != std::string::npos);
    CHECK(output.find(std::filesystem::canonical(writable).string() + " is writable by group or others") !=
          std::string::npos);
    CHECK(output.find("dispatcher starting") == std::string::npos);
  };
  // A folder anyone may write into (a library could have been planted there).
  std::filesystem::permissions(module.parent_path(), perms::all);
  refused(module.parent_path());
  std::filesystem::permissions(module.parent_path(), perms::owner_all | perms::group_read | perms::group_exec |
                                                         perms::others_read | perms::others_exec);
  // The file itself writable by its group.
  std::filesystem::permissions(module, perms::group_write, std::filesystem::perm_options::add);
  refused(module);
  std::filesystem::remove_all(root);
}

}  // namespace user_data_module_e2e

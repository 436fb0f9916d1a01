// CI proves the image's binary (issue 26). scripts/test.sh builds the build
// directory with the Dockerfile's own `cmake` and `strip` commands
// (scripts/build_image.sh records what it ran in <build>/image-build-commands);
// these tests read the Dockerfile independently and fail when the two differ,
// and check with ldd that every library the dispatcher and its module load
// comes from a package the runtime stage installs (scripts/check_runtime_libs.py).
// A developer build (`cmake --preset default`) has no record: then the first
// test says so and passes, unless OUTBOX_REQUIRE_IMAGE_BUILD is set, as
// scripts/test.sh sets it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"
#include "tests/support/dockerfile.hpp"
#include "tests/support/python_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace image_build_test {

using namespace std::chrono_literals;

namespace {

const std::filesystem::path source_dir{OUTBOX_SOURCE_DIR};
const std::filesystem::path build_dir = std::filesystem::path(OUTBOX_DISPATCHER_EXE).parent_path();

// The build stage's `RUN cmake ...` commands with the image's /build replaced
// by `dir` (relative to the source tree, as the test command runs them).
std::vector<std::string> image_build_commands(const std::string& dockerfile, const std::string& dir) {
  const auto stages = outbox::test::parse_dockerfile(dockerfile);
  REQUIRE(stages.size() >= 2);
  for (const auto& run : stages.front().all("RUN")) {
    if (!run.starts_with("cmake ")) continue;
    auto commands = outbox::test::shell_commands(run);
    for (auto& c : commands) {
      for (auto at = c.find("/build"); at != std::string::npos;) {
        const bool word_start = at == 0 || c[at - 1] == ' ';
        const bool word_end = at + 6 == c.size() || c[at + 6] == ' ' || c[at + 6] == '/';
        if (word_start && word_end) c.replace(at, 6, dir);
        at = c.find("/build", at + (word_start && word_end ? dir.size() : 1));
      }
    }
    return commands;
  }
  FAIL("the Dockerfile's build stage has no `RUN cmake ...`");
  return {};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string dockerfile() { return outbox::test::read_whole_file(source_dir / "Dockerfile"); }

std::string relative_build_dir() {
  return std::filesystem::relative(std::filesystem::weakly_canonical(build_dir),
                                   std::filesystem::weakly_canonical(source_dir))
      .string();
}

// The sanitizer build (scripts/test.sh --sanitize) links ASan's and UBSan's
// runtimes into the same files on purpose; the image's Release build never does.
#if defined(__SANITIZE_ADDRESS__)
const std::vector<std::string> sanitizer_runtimes{"--also", "libasan8", "--also", "libubsan1"};
#else
const std::vector<std::string> sanitizer_runtimes;
#endif

outbox::test::python_result check_runtime_libs(const std::filesystem::path& dockerfile_path) {
  std::vector<std::string> args{(source_dir / "scripts" / "check_runtime_libs.py").string(), "--dockerfile",
                                dockerfile_path.string()};
  args.insert(args.end(), sanitizer_runtimes.begin(), sanitizer_runtimes.end());
  args.push_back((build_dir / "dispatcher").string());
  args.push_back((build_dir / "dispatcher-user-data.so").string());
  return outbox::test::run_python(args, {}, 60s);
}

}  // namespace

TEST_CASE("image build: the test command built this directory with exactly the Dockerfile's cmake and strip lines") {
  const auto record = build_dir / "image-build-commands";
  if (!std::filesystem::exists(record)) {
    REQUIRE_MESSAGE(std::getenv("OUTBOX_REQUIRE_IMAGE_BUILD") == nullptr,
                    record << " is missing: scripts/build_image.sh did not build this directory");
    MESSAGE("not the image's build (no " << record << "): a developer build; scripts/test.sh checks this");
    return;
  }
  const auto ran = lines_of(outbox::test::read_whole_file(record));
  const auto expected = image_build_commands(dockerfile(), relative_build_dir());
  INFO("ran:\n" << outbox::test::read_whole_file(record));
  CHECK(ran == expected);
  REQUIRE(expected.size() == 3);  // configure, build, strip
  CHECK(expected[0].find("-DCMAKE_BUILD_TYPE=Release") != std::string::npos);
  CHECK(expected[2].starts_with("strip "));
}

TEST_CASE("image build: a changed Dockerfile build line no longer matches what was run") {
  const auto dir = relative_build_dir();
  const auto real = image_build_commands(dockerfile(), dir);
  auto text = dockerfile();
  const auto at = text.find("-DCMAKE_BUILD_TYPE=Release");
  REQUIRE(at != std::string::npos);
  text.replace(at, 26, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-Wno-restrict");
  CHECK(image_build_commands(text, dir) != real);
  text = dockerfile();
  text.replace(text.find("&& strip "), 9, "&& true ");
  CHECK(image_build_commands(text, dir) != real);
  // The replacement of /build is by whole path component only.
  CHECK(image_build_commands("FROM a AS build\nRUN cmake -B /build/x /builder\nFROM b\n", "out") ==
        std::vector<std::string>{"cmake -B out/x /builder"});
}

TEST_CASE("runtime libraries: everything ldd finds is installed by the Dockerfile's runtime stage") {
  REQUIRE(std::filesystem::exists(build_dir / "dispatcher-user-data.so"));
  const auto r = check_runtime_libs(source_dir / "Dockerfile");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("ok dispatcher: libpq.so.5 from libpq5") != std::string::npos);
  CHECK(r.out.find("ok dispatcher-user-data.so: libphonenumber.so.8 from libphonenumber8") != std::string::npos);
}

TEST_CASE("runtime libraries: a runtime stage without libpq5 or libphonenumber8 fails, naming the library") {
  const auto dir = outbox::test::make_temp_dir("outbox-dockerfile");
  const auto check_without = [&](const std::string& package, const std::string& library) {
    auto text = dockerfile();
    const auto whole = " " + package + " ";
    REQUIRE(text.find(whole) != std::string::npos);
    for (auto at = text.find(whole); at != std::string::npos; at = text.find(whole)) text.erase(at, whole.size() - 1);
    std::ofstream(dir / "Dockerfile") << text;
    const auto r = check_runtime_libs(dir / "Dockerfile");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("MISSING") != std::string::npos);
    CHECK(r.out.find(library) != std::string::npos);
  };
  check_without("libpq5", "dispatcher: libpq.so.5 (package libpq5 is not installed by the runtime stage)");
  check_without("libphonenumber8", "dispatcher-user-data.so: libphonenumber.so.8");
  std::filesystem::remove_all(dir);
}

TEST_CASE("Dockerfile: the image's OCI labels carry the project version, the commit and the source") {
  const auto stages = outbox::test::parse_dockerfile(dockerfile());
  std::string labels;
  for (const auto& l : stages.back().all("LABEL")) labels += l + " ";
  const auto cmake = outbox::test::read_whole_file(source_dir / "CMakeLists.txt");
  const auto at = cmake.find("project(outbox_dispatcher VERSION ");
  REQUIRE(at != std::string::npos);
  const auto from = at + std::string("project(outbox_dispatcher VERSION ").size();
  const auto version = cmake.substr(from, cmake.find(' ', from) - from);
  INFO(labels);
  CHECK(labels.find("org.opencontainers.image.version=\"" + version + "\"") != std::string::npos);
  CHECK(labels.find("org.opencontainers.image.revision=\"$OUTBOX_REVISION\"") != std::string::npos);
  CHECK(labels.find("org.opencontainers.image.source=\"$OUTBOX_SOURCE_URL\"") != std::string::npos);
  // The build stage hands the commit to cmake/write_revision.cmake through the environment.
  CHECK(stages.front().all("ARG") == std::vector<std::string>{"OUTBOX_REVISION=unknown"});
}

}  // namespace image_build_test

#include "tests/support/python_process.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"

namespace outbox::test {
namespace {

// `name` as execve needs it: unchanged when it has a slash, else the first
// executable of that name in `path_list` (PATH syntax).
std::optional<std::string> resolve_executable(const std::string& name, const std::string& path_list) {
  if (name.find('/') != std::string::npos) return name;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path_list.find(':', start);
    std::string dir = path_list.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return std::nullopt;
    start = end + 1;
  }
}

// Owns the temporary directory holding the output files.
struct temp_dir {
  std::filesystem::path path = make_temp_dir("outbox-python");
  temp_dir() = default;
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

std::string python_interpreter() {
  if (const char* v = std::getenv("TEST_PYTHON3"); v != nullptr && *v != '\0') return v;
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

python_result run_python(const std::vector<std::string>& args, const environment& overrides,
                         std::chrono::milliseconds timeout) {
  environment env = child_environment(overrides);
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  const std::string name = python_interpreter();
  const auto path_it = env.find("PATH");
  const auto exe = resolve_executable(name, path_it == env.end() ? "/usr/bin:/bin" : path_it->second);
  if (!exe) throw std::system_error(ENOENT, std::generic_category(), "cannot find " + name + " in PATH");

  std::vector<std::string> argv{*exe, "-B"};
  argv.insert(argv.end(), args.begin(), args.end());
  const temp_dir dir;
  return run_child(argv, env, timeout, dir.path);
}

}  // namespace outbox::test

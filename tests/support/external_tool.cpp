#include "tests/support/external_tool.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>

#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"

namespace outbox::test {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

tool_result run_in(const std::vector<std::string>& argv, const environment& env, std::chrono::milliseconds timeout,
                   const std::filesystem::path& dir) {
  return run_child(argv, env, timeout, dir);
}

}  // namespace

tool_result run_tool(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                     const std::filesystem::path& cwd) {
  const scratch_dir dir;
  if (cwd.empty()) return run_in(argv, child_environment({}), timeout, dir.path);
  // spawn_child has no working directory: a shell changes to it first.
  std::string script = "cd " + shell_quote(cwd.string()) + " && exec";
  for (const auto& a : argv) script += " " + shell_quote(a);
  return run_in({"/bin/sh", "-c", script}, child_environment({}), timeout, dir.path);
}

tool_result promtool_check_metrics(const std::string& text) {
  const scratch_dir dir;
  const auto input = dir.path / "metrics.txt";
  std::ofstream(input, std::ios::binary) << text;
  const std::string script = "exec " + std::string(promtool_exe) + " check metrics < " + shell_quote(input.string());
  return run_in({"/bin/sh", "-c", script}, child_environment({}), std::chrono::seconds(30), dir.path);
}

tool_result chromium_dump_dom(const std::string& url) {
  const scratch_dir dir;
  // A scratch profile and HOME, so nothing of the user's is read or written.
  // --no-sandbox: the page is ours, on loopback, and Chromium's sandbox needs
  // privileges (user namespaces, or not being root) a test runner may lack.
  auto env = child_environment({{"HOME", dir.path.string()}});
  const std::vector<std::string> argv{chromium_exe,
                                      "--headless",
                                      "--no-sandbox",
                                      "--disable-gpu",
                                      "--disable-dev-shm-usage",
                                      "--no-first-run",
                                      "--no-default-browser-check",
                                      "--disable-extensions",
                                      "--user-data-dir=" + (dir.path / "profile").string(),
                                      "--dump-dom",
                                      url};
  return run_in(argv, env, std::chrono::seconds(60), dir.path);
}

}  // namespace outbox::test

#pragma once
// Debian tools the monitoring tests drive as child processes: promtool (from
// `prometheus`) on the metrics text and the alert rules, and headless Chromium
// (`chromium`) on the status page. scripts/setup.sh installs both; a test that
// needs one fails, rather than skips, when it is missing.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"

namespace outbox::test {

inline constexpr const char* promtool_exe = "/usr/bin/promtool";
inline constexpr const char* chromium_exe = "/usr/bin/chromium";

using tool_result = finished_child;

// Runs `argv` (argv[0] a path) to completion in `cwd` with this process's
// environment minus the dispatcher's settings, stdin from /dev/null. Throws
// std::system_error when it cannot be started (say, the tool is not installed).
[[nodiscard]] tool_result run_tool(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                   const std::filesystem::path& cwd = {});

// `promtool check metrics` on `text` (the tool reads the metrics from stdin).
[[nodiscard]] tool_result promtool_check_metrics(const std::string& text);

// The DOM that headless Chromium builds from `url` (`--dump-dom`), in a scratch profile.
[[nodiscard]] tool_result chromium_dump_dom(const std::string& url);

}  // namespace outbox::test

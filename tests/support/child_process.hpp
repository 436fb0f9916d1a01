#pragma once
// Child-process plumbing shared by dispatcher_process and run_python: fork/exec
// safe in a multi-threaded test program, waiting on a pidfd, scratch
// directories and output files.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "dispatcher/config/config.hpp"

namespace outbox::test {

struct child_handle {
  pid_t pid = -1;
  int pidfd = -1;  // -1 without pidfd_open (old kernel): waiting then polls
};

// Starts argv[0] (a path: no PATH search) with argv and exactly `env`, stdin
// from /dev/null, stdout and stderr into files created (truncated) at the two
// paths; the same path for both gives one interleaved file. The child gets no
// other descriptor of this process and is SIGKILLed when this process dies.
// Throws std::system_error when a file cannot be opened or fork/exec fails (the
// exec errno is reported back through a pipe). The caller owns the pidfd.
[[nodiscard]] child_handle spawn_child(const std::vector<std::string>& argv, const environment& env,
                                       const std::filesystem::path& stdout_path,
                                       const std::filesystem::path& stderr_path);

// Reaps `pid` once it has exited and returns its waitpid status; nullopt when
// it is still running after `timeout`. Blocks in poll() on `pidfd` when >= 0.
[[nodiscard]] std::optional<int> wait_child_exit(pid_t pid, int pidfd, std::chrono::milliseconds timeout);

// SIGKILLs `pid` and reaps it.
void kill_child(pid_t pid);

// A waitpid status as a shell reports it: the exit code, or 128 + the signal.
[[nodiscard]] int exit_status(int wait_status);

// A new empty directory named `<temp dir>/<prefix>.XXXXXX`.
[[nodiscard]] std::filesystem::path make_temp_dir(const std::string& prefix);

// A make_temp_dir() directory, removed with everything in it when this goes.
struct scratch_dir {
  explicit scratch_dir(const std::string& prefix = "outbox-scratch") : path(make_temp_dir(prefix)) {}
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path path;
};

// The file's bytes; empty when it cannot be read.
[[nodiscard]] std::string read_whole_file(const std::filesystem::path& path);

// A command run to its end.
struct finished_child {
  int exit_code = -1;   // exit code, or 128 + signal; -1 when it timed out (then killed)
  std::string out;      // stdout
  std::string err;      // stderr
  std::string command;  // the command line, for diagnostics
};

// Runs argv with exactly `env` to its end (killed after `timeout`), its output
// kept in files of `dir`.
[[nodiscard]] finished_child run_child(const std::vector<std::string>& argv, const environment& env,
                                       std::chrono::milliseconds timeout, const std::filesystem::path& dir);

}  // namespace outbox::test

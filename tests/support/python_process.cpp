#include "tests/support/python_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>
#include <thread>

#include "tests/support/dispatcher_process.hpp"

namespace outbox::test {
namespace {

using steady = std::chrono::steady_clock;

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "outbox-python.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno(errno, "mkdtemp");
  return pattern;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

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

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : static_cast<int>(fd);
#else
  (void)pid;
  return -1;
#endif
}

// In the forked child: closes every descriptor above 2 except `keep`.
void close_inherited_fds(int keep) {
#ifdef SYS_close_range
  const bool below = keep == 3 || ::syscall(SYS_close_range, 3U, static_cast<unsigned>(keep - 1), 0U) == 0;
  if (below && ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0U, 0U) == 0) return;
#endif
  for (int fd = 3; fd < 65536; ++fd) {
    if (fd != keep) (void)::close(fd);
  }
}

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

// Reaps `pid`; nullopt when it is still running after `timeout`.
std::optional<int> wait_for_exit(pid_t pid, int pidfd, std::chrono::milliseconds timeout) {
  const auto deadline = steady::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return exit_status(status);
    if (r < 0 && errno != EINTR) throw_errno(errno, "waitpid");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    if (left <= std::chrono::milliseconds::zero()) return std::nullopt;
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60000)));
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(5)));  // no pidfd: old kernel
    }
  }
}

// Owns the temporary directory holding the output files.
struct temp_dir {
  std::filesystem::path path = make_temp_dir();
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
  if (!exe) throw_errno(ENOENT, "cannot find " + name + " in PATH");

  python_result result;
  std::vector<std::string> argv_text{*exe, "-B"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  for (const auto& a : argv_text) result.command += (result.command.empty() ? "" : " ") + a;

  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls (the test process has other threads).
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const temp_dir dir;
  const auto out_path = dir.path / "stdout";
  const auto err_path = dir.path / "stderr";
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int report[2] = {-1, -1};  // the child writes errno here when exec fails; closed by a successful exec
  if (out_fd < 0 || err_fd < 0 || null_fd < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    const int saved = errno;
    for (const int fd : {out_fd, err_fd, null_fd}) {
      if (fd >= 0) ::close(fd);
    }
    throw_errno(saved, "open output files for " + name);
  }
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // die with the test program
    if (::getppid() != parent) ::_exit(127);
    ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    close_inherited_fds(report[1]);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!::write(report[1], &err, sizeof err);
    ::_exit(127);
  }
  const int fork_errno = errno;
  for (const int fd : {out_fd, err_fd, null_fd, report[1]}) ::close(fd);
  if (pid < 0) {
    ::close(report[0]);
    throw_errno(fork_errno, "fork");
  }
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw_errno(exec_errno, "exec " + *exe);
  }

  const int pidfd = open_pidfd(pid);
  std::optional<int> status;
  try {
    status = wait_for_exit(pid, pidfd, timeout);
  } catch (...) {
    ::kill(pid, SIGKILL);
    int ignored = 0;
    while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    if (pidfd >= 0) ::close(pidfd);
    throw;
  }
  if (!status) {
    ::kill(pid, SIGKILL);
    int ignored = 0;
    while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  result.exit_code = status.value_or(-1);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

}  // namespace outbox::test

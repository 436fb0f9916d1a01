#include "tests/support/child_process.hpp"

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
#include <fstream>
#include <iterator>
#include <system_error>
#include <thread>

namespace outbox::test {
namespace {

using steady = std::chrono::steady_clock;

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// Closes the descriptor when spawn_child leaves, on success or by an exception.
struct fd_guard {
  int fd = -1;
  explicit fd_guard(int f) : fd(f) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

int open_output(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno(errno, "open " + path.string());
  return fd;
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

// In the forked child: closes every descriptor above 2 except `keep`, so the
// child does not inherit the test's sockets (the HTTPS server's accepted
// connections would otherwise stay open after the server closes them).
void close_inherited_fds(int keep) {
#ifdef SYS_close_range
  const bool below = keep == 3 || ::syscall(SYS_close_range, 3U, static_cast<unsigned>(keep - 1), 0U) == 0;
  if (below && ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0U, 0U) == 0) return;
#endif
  for (int fd = 3; fd < 65536; ++fd) {
    if (fd != keep) (void)::close(fd);
  }
}

void reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

child_handle spawn_child(const std::vector<std::string>& args, const environment& env,
                         const std::filesystem::path& stdout_path, const std::filesystem::path& stderr_path) {
  if (args.empty()) throw_errno(EINVAL, "spawn_child: empty argv");
  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls (the test process has other threads).
  std::vector<std::string> argv_text = args;
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const fd_guard out(open_output(stdout_path));
  const bool shared = stderr_path == stdout_path;
  const fd_guard own_err(shared ? -1 : open_output(stderr_path));
  const int err_fd = shared ? out.fd : own_err.fd;
  const fd_guard null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null.fd < 0) throw_errno(errno, "open /dev/null");
  int report[2];  // the child writes errno here when exec fails; closed by a successful exec
  if (::pipe2(report, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
  const fd_guard report_read(report[0]);
  fd_guard report_write(report[1]);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid == 0) {
    // Die with the test program, even if it crashes before reaping us.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(null.fd, 0);
    ::dup2(out.fd, 1);
    ::dup2(err_fd, 2);
    close_inherited_fds(report_write.fd);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!::write(report_write.fd, &err, sizeof err);
    ::_exit(127);
  }
  const int fork_errno = errno;
  report_write.reset();  // else the read below would never see end of file
  if (pid < 0) throw_errno(fork_errno, "fork");
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(report_read.fd, &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    reap(pid);
    throw_errno(exec_errno, "exec " + args[0]);
  }
  return {pid, open_pidfd(pid)};
}

std::optional<int> wait_child_exit(pid_t pid, int pidfd, std::chrono::milliseconds timeout) {
  const auto deadline = steady::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
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

void kill_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  reap(pid);
}

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno(errno, "mkdtemp");
  return pattern;
}

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

finished_child run_child(const std::vector<std::string>& argv, const environment& env,
                         std::chrono::milliseconds timeout, const std::filesystem::path& dir) {
  finished_child result;
  for (const auto& a : argv) result.command += (result.command.empty() ? "" : " ") + a;
  const auto out_path = dir / "stdout";
  const auto err_path = dir / "stderr";
  const child_handle child = spawn_child(argv, env, out_path, err_path);
  std::optional<int> status;
  try {
    status = wait_child_exit(child.pid, child.pidfd, timeout);
  } catch (...) {
    kill_child(child.pid);
    if (child.pidfd >= 0) ::close(child.pidfd);
    throw;
  }
  if (!status) kill_child(child.pid);
  if (child.pidfd >= 0) ::close(child.pidfd);
  result.exit_code = status ? exit_status(*status) : -1;
  result.out = read_whole_file(out_path);
  result.err = read_whole_file(err_path);
  return result;
}

}  // namespace outbox::test

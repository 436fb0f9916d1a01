#pragma once
// The real `dispatcher` executable as a child process, for end-to-end tests:
// spawned with the test's environment plus overrides, stdout and stderr in a log
// file, signalled, killed, and reaped. Plus `e2e_fixture`, what every e2e test
// starts from: a scratch database, a local HTTPS server signed by a throwaway CA,
// the dispatcher settings pointing at both, and a check that no process ever
// printed the destination secret.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/config/config.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::test {

// The environment a child gets: this process's environment without the
// variables that configure the dispatcher (DATABASE_URL and every OUTBOX_* one:
// the dispatcher rejects unknown OUTBOX_ names, so a stray one from the shell
// would fail every start), then `overrides` on top. The libpq variables
// (PGHOST...) are inherited.
[[nodiscard]] environment child_environment(const environment& overrides);

class dispatcher_process {
 public:
  // Starts `dispatcher <args...>` (`exe`: the build's OUTBOX_DISPATCHER_EXE unless
  // given). `name` names the log file and the process in diagnostics. Throws
  // std::system_error when the executable cannot be started.
  dispatcher_process(std::vector<std::string> args, const environment& overrides, std::string name = "dispatcher",
                     const std::filesystem::path& exe = OUTBOX_DISPATCHER_EXE);
  ~dispatcher_process();  // SIGKILL if still running, reap, remove the log directory
  dispatcher_process(const dispatcher_process&) = delete;
  dispatcher_process& operator=(const dispatcher_process&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  void signal(int signo);  // no-op once reaped
  void kill();             // SIGKILL

  // The exit status once the process ended: its exit code, or 128 + the signal
  // number when a signal killed it (as a shell reports it). nullopt when it is
  // still running after `timeout`. Waits on a pidfd, not by polling.
  [[nodiscard]] std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  [[nodiscard]] bool running();  // reaps it when it has ended
  // When wait_exit first saw the process gone (steady clock).
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> exited_at() const { return exited_at_; }

  // Everything it wrote to stdout and stderr so far.
  [[nodiscard]] std::string logs() const;
  // The last `lines` lines of logs(), headed by the command, for INFO/MESSAGE.
  [[nodiscard]] std::string describe(std::size_t lines = 60) const;
  // How many times `text` occurs in logs().
  [[nodiscard]] std::size_t count_in_logs(std::string_view text) const;
  // Waits until `text` occurs at least `times` times: woken by each write to the
  // log (inotify), not a polling interval; false at once if the process exited without it.
  [[nodiscard]] bool wait_for_log(std::string_view text, std::chrono::milliseconds timeout,
                                  std::size_t times = 1) const;

 private:
  void reap(int wait_status);

  std::string name_;
  std::vector<std::string> args_;
  std::filesystem::path dir_;
  std::filesystem::path log_path_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> status_;
  std::optional<std::chrono::steady_clock::time_point> exited_at_;
};

struct cli_result {
  int exit_code = -1;  // as dispatcher_process::wait_exit; -1 when it timed out (then killed)
  std::string output;  // stdout and stderr together
};

// Runs a one-shot command (`dispatcher sweep ...`) to completion.
[[nodiscard]] cli_result run_cli(std::vector<std::string> args, const environment& overrides,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Scratch database + HTTPS server on its own thread + dispatcher settings for
// both (base_environment from engine_harness.hpp). Every process started
// through it is kept, and its output is checked for the secret at the end.
class e2e_fixture {
 public:
  e2e_fixture();
  ~e2e_fixture();  // CHECKs that no process printed secret()
  e2e_fixture(const e2e_fixture&) = delete;
  e2e_fixture& operator=(const e2e_fixture&) = delete;

  // `dispatcher run` with env + `extra`; owned by the fixture.
  dispatcher_process& start_dispatcher(const environment& extra = {}, const std::string& name = "dispatcher");
  // Any dispatcher command with env + `extra`, kept for the secret check.
  dispatcher_process& spawn(std::vector<std::string> args, const environment& extra, const std::string& name);
  cli_result cli(std::vector<std::string> args, const environment& extra = {},
                 std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // The webhook signing secret configured for webhook/default.
  [[nodiscard]] std::string secret() const;
  // The tail of every process's output, for INFO.
  [[nodiscard]] std::string diagnostics() const;

  // Enqueues through the SQL function (like Django); returns the row id.
  std::int64_t enqueue(std::int64_t lead, const std::string& event = "Lead",
                       const std::string& payload = R"({"value": 1})", const std::string& provider = "webhook");
  [[nodiscard]] long long count(const std::string& where) const;  // rows of event_delivery matching `where`

  scratch_database db;
  test_pki pki;
  test_https_server server;
  environment env;  // what every dispatcher gets (before `extra`)

 private:
  std::vector<std::unique_ptr<dispatcher_process>> processes_;
  std::vector<std::string> outputs_;  // of finished run_cli commands
};

}  // namespace outbox::test

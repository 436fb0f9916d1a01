#include "tests/support/dispatcher_process.hpp"

#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <exception>
#include <sstream>
#include <system_error>

#include "tests/support/child_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/file_change_wait.hpp"

#ifndef OUTBOX_DISPATCHER_EXE
#error "OUTBOX_DISPATCHER_EXE must name the dispatcher executable"
#endif

namespace outbox::test {
namespace {

std::size_t occurrences(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return 0;
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string_view::npos; at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

std::string tail_lines(const std::string& text, std::size_t lines) {
  std::size_t start = text.size();
  for (std::size_t seen = 0; start > 0 && seen <= lines;) {
    --start;
    if (text[start] == '\n') ++seen;
  }
  if (start > 0) return "[...]\n" + text.substr(start + 1);
  return text;
}

}  // namespace

environment child_environment(const environment& overrides) {
  environment env = process_environment();
  std::erase_if(env, [](const auto& kv) { return kv.first.starts_with("OUTBOX_") || kv.first == "DATABASE_URL"; });
  for (const auto& [k, v] : overrides) env[k] = v;
  return env;
}

dispatcher_process::dispatcher_process(std::vector<std::string> args, const environment& overrides, std::string name,
                                       const std::filesystem::path& exe)
    : name_(std::move(name)), args_(std::move(args)) {
  dir_ = make_temp_dir("outbox-e2e");
  log_path_ = dir_ / (name_ + ".log");
  std::vector<std::string> argv{exe.string()};
  argv.insert(argv.end(), args_.begin(), args_.end());
  try {
    const child_handle child = spawn_child(argv, child_environment(overrides), log_path_, log_path_);
    pid_ = child.pid;
    pidfd_ = child.pidfd;
  } catch (...) {
    // The destructor does not run for a constructor that throws.
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

dispatcher_process::~dispatcher_process() {
  if (pid_ > 0 && !status_) kill_child(pid_);
  if (pidfd_ >= 0) ::close(pidfd_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void dispatcher_process::reap(int wait_status) {
  status_ = exit_status(wait_status);
  exited_at_ = std::chrono::steady_clock::now();
}

void dispatcher_process::signal(int signo) {
  if (pid_ > 0 && !status_) ::kill(pid_, signo);
}

void dispatcher_process::kill() { signal(SIGKILL); }

std::optional<int> dispatcher_process::wait_exit(std::chrono::milliseconds timeout) {
  if (status_ || pid_ <= 0) return status_;
  if (const auto wait_status = wait_child_exit(pid_, pidfd_, timeout)) reap(*wait_status);
  return status_;
}

bool dispatcher_process::running() { return !wait_exit(std::chrono::milliseconds(0)).has_value(); }

std::string dispatcher_process::logs() const { return read_whole_file(log_path_); }

std::string dispatcher_process::describe(std::size_t lines) const {
  std::ostringstream out;
  out << "---- " << name_ << " (pid " << pid_ << "): dispatcher";
  for (const auto& a : args_) out << ' ' << a;
  if (status_) out << " [exit status " << *status_ << "]";
  out << " ----\n" << tail_lines(logs(), lines);
  return out.str();
}

std::size_t dispatcher_process::count_in_logs(std::string_view text) const { return occurrences(logs(), text); }

bool dispatcher_process::wait_for_log(std::string_view text, std::chrono::milliseconds timeout,
                                      std::size_t times) const {
  return wait_for_file_change(
      log_path_, pidfd_, [&] { return count_in_logs(text) >= times; }, timeout);
}

cli_result run_cli(std::vector<std::string> args, const environment& overrides, std::chrono::milliseconds timeout) {
  dispatcher_process p(std::move(args), overrides, "cli");
  cli_result r;
  if (const auto status = p.wait_exit(timeout)) {
    r.exit_code = *status;
  } else {
    p.kill();
    (void)p.wait_exit(std::chrono::seconds(5));
  }
  r.output = p.logs();
  return r;
}

// ---------------------------------------------------------------------------

namespace {

// Whether an assertion of the running test case (or subcase pass) failed, so
// the fixture can dump the processes' output only when it helps. A listener,
// because doctest has no public "has the current test failed" query.
std::atomic<bool> current_test_failed{false};

struct failure_listener : doctest::IReporter {
  explicit failure_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { current_test_failed = false; }
  void test_case_reenter(const doctest::TestCaseData&) override { current_test_failed = false; }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& ad) override {
    if (ad.m_failed) current_test_failed = true;
  }
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("outbox_e2e_failures", 1, failure_listener);

test_server_options server_options(const test_pki& pki) {
  test_server_options o;
  o.certificate = pki.trusted.issue();
  return o;
}

}  // namespace

e2e_fixture::e2e_fixture() : server(server_options(pki)) {
  env = base_environment(db, server, pki.trusted);
  // The children inherit the libpq environment; settings only here.
  for (const char* name : {"PGHOST", "PGPORT", "PGUSER"}) env.erase(name);
  env["OUTBOX_LOG_LEVEL"] = "info";  // debug logs every delivered row: too much for thousands
}

e2e_fixture::~e2e_fixture() {
  // No INFO here: during unwinding doctest would print it as context.
  const std::string s = secret();
  std::string leaked_by;
  for (const auto& p : processes_) {
    if (p->logs().find(s) != std::string::npos) leaked_by += p->name() + " ";
  }
  for (const auto& out : outputs_) {
    if (out.find(s) != std::string::npos) leaked_by += "cli ";
  }
  CHECK_EQ(leaked_by, "");  // names of the processes that printed the destination secret
  if ((current_test_failed || std::uncaught_exceptions() > 0) && !processes_.empty()) {
    MESSAGE("output of the dispatcher processes of this test:\n" << diagnostics());
  }
  processes_.clear();  // kill the dispatchers before the database and the server go
}

dispatcher_process& e2e_fixture::spawn(std::vector<std::string> args, const environment& extra,
                                       const std::string& name) {
  environment all = env;
  for (const auto& [k, v] : extra) all[k] = v;
  processes_.push_back(std::make_unique<dispatcher_process>(std::move(args), all, name));
  return *processes_.back();
}

dispatcher_process& e2e_fixture::start_dispatcher(const environment& extra, const std::string& name) {
  return spawn({"run"}, extra, name);
}

cli_result e2e_fixture::cli(std::vector<std::string> args, const environment& extra,
                            std::chrono::milliseconds timeout) {
  environment all = env;
  for (const auto& [k, v] : extra) all[k] = v;
  auto r = run_cli(std::move(args), all, timeout);
  outputs_.push_back(r.output);
  return r;
}

std::string e2e_fixture::secret() const { return env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"); }

std::string e2e_fixture::diagnostics() const {
  std::string out;
  for (const auto& p : processes_) out += p->describe() + "\n";
  return out;
}

std::int64_t e2e_fixture::enqueue(std::int64_t lead, const std::string& event, const std::string& payload,
                                  const std::string& provider) {
  db.query("SELECT enqueue_event_delivery($1, $2, $3, $4::jsonb)", {std::to_string(lead), provider, event, payload});
  return db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = $1 AND provider = $2 AND event_name = $3",
                   {std::to_string(lead), provider, event});
}

long long e2e_fixture::count(const std::string& where) const {
  return db.scalar("SELECT count(*) FROM event_delivery WHERE " + where);
}

}  // namespace outbox::test

#include "bench/support.hpp"

#include "providers/crypto.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace outbox::bench {
namespace {

double ticks_per_second() {
  static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  return hz;
}

// Fields of /proc/<pid>/stat after the command name: index 0 is field 3 (state).
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

double stat_cpu(const std::vector<std::string>& f) {
  if (f.size() < 13) return 0;
  return (std::stod(f[11]) + std::stod(f[12])) / ticks_per_second();  // utime, stime
}

double status_mb(const std::string& status, const char* key) {
  const auto at = status.find(key);
  if (at == std::string::npos) return 0;
  return std::strtod(status.c_str() + at + std::strlen(key), nullptr) / 1024.0;  // kB
}

double timeval_seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

}  // namespace

void note(const std::string& text) { std::cerr << "outbox_bench: " << text << std::endl; }

// ---------------------------------------------------------------------------

pg::pg(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
    const std::string message = conn_ ? PQerrorMessage(conn_) : "out of memory";
    if (conn_) PQfinish(conn_);
    throw std::runtime_error("cannot connect to PostgreSQL (" + conninfo + "): " + message);
  }
}

pg::~pg() { PQfinish(conn_); }

pg_result pg::check(PGresult* raw, const std::string& what) {
  pg_result r(raw);
  const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error("PostgreSQL error in " + what.substr(0, 80) + ": " +
                             (r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_)));
  }
  return r;
}

pg_result pg::exec(const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  return check(
      PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0),
      sql);
}

void pg::prepare(const std::string& name, const std::string& sql) {
  (void)check(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr), sql);
}

pg_result pg::exec_prepared(const std::string& name, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  return check(PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr, 0),
               name);
}

pg_result pg::exec_prepared_nullable(const std::string& name, const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return check(PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr, 0),
               name);
}

std::int64_t pg::scalar(const std::string& sql, const std::vector<std::string>& params) {
  const auto r = exec(sql, params);
  if (PQntuples(r.get()) < 1 || PQgetisnull(r.get(), 0, 0)) return 0;
  return std::stoll(PQgetvalue(r.get(), 0, 0));
}

std::string value(const pg_result& r, int row, int col) { return PQgetvalue(r.get(), row, col); }

// ---------------------------------------------------------------------------

proc_sample sample_process(pid_t pid) {
  proc_sample s;
  s.cpu_seconds = stat_cpu(stat_fields(pid));
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  const std::string status((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  s.hwm_mb = status_mb(status, "VmHWM:");
  s.rss_mb = status_mb(status, "VmRSS:");
  return s;
}

child_process::child_process(const std::string& exe, const std::vector<std::string>& args,
                             const std::vector<std::string>& env, const std::string& output_path)
    : output_(output_path) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int rc = posix_spawn(&pid_, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + exe + ": " + std::strerror(rc));
}

child_process::~child_process() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

bool child_process::running() {
  if (reaped_) return false;
  int status = 0;
  rusage usage{};
  const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
  if (r == 0) return true;
  reaped_ = true;
  exit_report rep;
  rep.status = status;
  rep.exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  rep.cpu_seconds = timeval_seconds(usage.ru_utime) + timeval_seconds(usage.ru_stime);
  rep.max_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  report_ = rep;
  return false;
}

child_process::exit_report child_process::reap(steady::time_point deadline, bool kill_after) {
  const auto started = steady::now();
  double hwm = 0;
  for (;;) {
    hwm = std::max(hwm, sample_process(pid_).hwm_mb);  // VmHWM is gone once the child is a zombie
    if (!running()) {
      report_->stop_seconds = seconds_between(started, steady::now());
      report_->vm_hwm_mb = hwm;
      return *report_;
    }
    if (steady::now() >= deadline) {
      if (!kill_after) throw std::runtime_error("child did not exit in time");
      ::kill(pid_, SIGKILL);
      int status = 0;
      rusage usage{};
      ::wait4(pid_, &status, 0, &usage);
      reaped_ = true;
      exit_report rep;
      rep.status = status;
      rep.killed = true;
      rep.cpu_seconds = timeval_seconds(usage.ru_utime) + timeval_seconds(usage.ru_stime);
      rep.max_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
      rep.stop_seconds = seconds_between(started, steady::now());
      rep.vm_hwm_mb = hwm;
      report_ = rep;
      return rep;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

child_process::exit_report child_process::terminate(std::chrono::seconds grace) {
  if (!reaped_) ::kill(pid_, SIGTERM);
  return reap(steady::now() + grace, true);
}

child_process::exit_report child_process::wait(std::chrono::seconds limit) { return reap(steady::now() + limit, true); }

std::string child_process::output_tail(std::size_t lines) const {
  std::ifstream in(output_);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += "    " + l + "\n";
  return out;
}

std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view var(*e);
    if (var.starts_with("OUTBOX_") || var.starts_with("DATABASE_URL=")) continue;
    bool overridden = false;
    for (const auto& [k, v] : extra) overridden = overridden || var.starts_with(k + "=");
    if (!overridden) env.emplace_back(var);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::vector<std::string> container_environment(const std::vector<std::pair<std::string, std::string>>& settings) {
  // debian:12-slim's PATH; HOME is what Docker sets for the image's user (USER 10001, home /nonexistent).
  std::vector<std::string> env{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                               "HOME=/nonexistent"};
  for (const char* name : {"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  for (const auto& [k, v] : settings) env.push_back(k + "=" + v);
  return env;
}

cluster_cpu::cluster_cpu(pid_t any_backend) {
  const auto f = stat_fields(any_backend);
  if (f.size() > 1) postmaster_ = static_cast<pid_t>(std::stol(f[1]));  // ppid
}

void cluster_cpu::refresh() {
  if (postmaster_ <= 0) return;
  DIR* dir = opendir("/proc");
  if (!dir) return;
  std::vector<std::pair<pid_t, double>> now;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const auto f = stat_fields(static_cast<pid_t>(pid));
    if (f.size() < 13) continue;
    if (pid == postmaster_ || std::stol(f[1]) == postmaster_) now.emplace_back(static_cast<pid_t>(pid), stat_cpu(f));
  }
  closedir(dir);
  const std::lock_guard lock{mutex_};
  for (const auto& [pid, cpu] : now) seen_[pid] = cpu;
}

void cluster_cpu::mark() {
  refresh();
  const std::lock_guard lock{mutex_};
  base_ = seen_;
}

std::map<pid_t, double> cluster_cpu::since_mark() {
  refresh();
  const std::lock_guard lock{mutex_};
  std::map<pid_t, double> out;
  for (const auto& [pid, cpu] : seen_) {
    const auto it = base_.find(pid);
    out[pid] = cpu - (it == base_.end() ? 0.0 : it->second);
  }
  return out;
}

double cluster_cpu::seconds() {
  refresh();
  const std::lock_guard lock{mutex_};
  double total = 0;
  for (const auto& [pid, cpu] : seen_) total += cpu;
  return total;
}

machine_cpu machine_cpu::now() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;  // "cpu"
  std::vector<double> v;
  for (int i = 0; i < 8; ++i) {
    double x = 0;
    in >> x;
    v.push_back(x);
  }
  // user nice system idle iowait irq softirq steal
  machine_cpu m;
  m.total = 0;
  for (double x : v) m.total += x;
  m.busy = m.total - v[3] - v[4];
  m.total /= ticks_per_second();
  m.busy /= ticks_per_second();
  return m;
}

double self_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return timeval_seconds(u.ru_utime) + timeval_seconds(u.ru_stime);
}

double machine_steal_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu") return -1;
  return steal / static_cast<double>(ticks_per_second());
}

double cpu_reference_ms() {
  const std::string block(16 << 20, 'x');
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto digest = providers::sha256(block);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (digest.empty()) return -1;
    best = i == 0 ? ms : std::min(best, ms);
  }
  return best;
}

double load_average_1m() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

std::string fmt(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (decimals == 0 && std::fabs(v) >= 10000) {  // thousands separators for big counts
    const bool neg = s.front() == '-';
    std::string digits = neg ? s.substr(1) : s;
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
      digits.insert(static_cast<std::size_t>(i), 1, ',');  // (pos, count, char): GCC 12 -O3 warns falsely on (pos, "")
    s = (neg ? "-" : "") + digits;
  }
  return s;
}

double num(const nlohmann::json& j, const char* a, const char* b) {
  const nlohmann::json* p = &j;
  if (!p->contains(a)) return std::nan("");
  p = &(*p)[a];
  if (b) {
    if (!p->contains(b)) return std::nan("");
    p = &(*p)[b];
  }
  return p->is_number() ? p->get<double>() : std::nan("");
}

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& r) {
    std::string text;
    for (std::size_t c = 0; c < r.size(); ++c) {
      text += r[c];
      if (c + 1 < r.size()) text += std::string(width[c] - r[c].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    line(rows[i]);
    if (i == 0) {
      std::vector<std::string> rule;
      for (std::size_t c = 0; c < rows[0].size(); ++c) rule.emplace_back(width[c], '-');
      line(rule);
    }
  }
  return out;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nan("");
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  if (rank == 0) rank = 1;
  return sorted[std::min(rank, sorted.size()) - 1];
}

double seconds_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

bool reset_statements(pg& admin) {
  try {
    (void)admin.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    (void)admin.exec("SELECT pg_stat_statements_reset()");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace outbox::bench

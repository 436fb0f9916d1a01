#include "bench/receiver_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace outbox::bench {
namespace {

using namespace std::chrono_literals;

// The receiver's script, from the source tree this bench was built from.
constexpr const char* script = OUTBOX_SOURCE_DIR "/bench/webhook_receiver.mjs";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("receiver: cannot write " + path);
}

}  // namespace

receiver_process::receiver_process(const test::certificate_pem& cert, const std::string& secret,
                                   const std::string& log_path)
    : log_path_(log_path) {
  char dir_template[] = "/tmp/outbox-receiver-XXXXXX";
  if (!::mkdtemp(dir_template)) throw std::runtime_error(std::string("receiver: mkdtemp: ") + std::strerror(errno));
  dir_ = dir_template;
  write_file(dir_ + "/cert.pem", cert.cert);
  write_file(dir_ + "/key.pem", cert.key);

  // Close-on-exec ends: the dispatchers spawned later must not inherit them
  // (an inherited write end of its stdin would keep the receiver alive).
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("receiver: pipe: ") + std::strerror(errno));
  std::vector<std::string> args{"node", script, dir_ + "/cert.pem", dir_ + "/key.pem"};
  if (!secret.empty()) args.push_back(secret);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = ::posix_spawnp(&pid_, "node", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (rc != 0) {
    ::close(to_child_);
    ::close(from_child_);
    throw std::runtime_error(std::string("receiver: cannot start node (scripts/setup.sh installs it): ") +
                             std::strerror(rc));
  }

  // The first line is "listening PORT".
  std::string first;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  char c = 0;
  while (first.empty() || first.back() != '\n') {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{from_child_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0 || ::read(from_child_, &c, 1) != 1) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      ::close(to_child_);
      ::close(from_child_);
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      throw std::runtime_error("receiver: it did not start listening; see " + log_path);
    }
    first.push_back(c);
  }
  const std::string_view port_text = std::string_view(first).substr(first.find(' ') + 1);
  unsigned port = 0;
  std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  port_ = static_cast<std::uint16_t>(port);
  reader_ = std::thread([this] { read_lines(); });
}

receiver_process::~receiver_process() {
  ::close(to_child_);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  if (reader_.joinable()) reader_.join();  // its pipe reached end of file with the process
  ::close(from_child_);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string receiver_process::url(std::string_view path) const {
  return "https://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

std::vector<sink_hit> receiver_process::hits(std::size_t from) const {
  const std::lock_guard lock{mutex_};
  if (from >= hits_.size()) return {};
  return {hits_.begin() + static_cast<std::ptrdiff_t>(from), hits_.end()};
}

void receiver_process::read_lines() {
  std::string buffer;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t end; (end = buffer.find('\n', start)) != std::string::npos; start = end + 1) {
      take(buffer.substr(start, end - start));
    }
    buffer.erase(0, start);
  }
}

void receiver_process::take(const std::string& line) {
  if (line.starts_with("b ")) {
    refused_.fetch_add(1);  // the receiver's log (stderr) says why
    return;
  }
  if (!line.starts_with("h ")) return;
  const auto space = line.rfind(' ');
  std::int64_t ns = 0;
  std::from_chars(line.data() + space + 1, line.data() + line.size(), ns);
  sink_hit h;
  h.key = line.substr(2, space - 2);
  h.at = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
  h.wall = std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::system_clock::now() -
                                                                             (std::chrono::steady_clock::now() - h.at));
  const std::lock_guard lock{mutex_};
  hits_.push_back(std::move(h));
  count_.store(hits_.size(), std::memory_order_release);
}

}  // namespace outbox::bench

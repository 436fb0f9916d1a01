#include "tests/support/file_change_wait.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <stdexcept>
#include <string>

namespace outbox::test {
namespace {

class inotify_watch {
 public:
  explicit inotify_watch(const std::filesystem::path& file) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0 || ::inotify_add_watch(fd_, file.c_str(), IN_MODIFY | IN_CLOSE_WRITE) < 0) {
      if (fd_ >= 0) ::close(fd_);
      throw std::runtime_error("cannot watch " + file.string());
    }
  }
  inotify_watch(const inotify_watch&) = delete;
  inotify_watch& operator=(const inotify_watch&) = delete;
  ~inotify_watch() { ::close(fd_); }

  [[nodiscard]] int fd() const noexcept { return fd_; }
  // Reads away the queued events: one check covers every write so far.
  void drain() const {
    std::array<char, 4096> buffer{};
    while (::read(fd_, buffer.data(), buffer.size()) > 0) {
    }
  }

 private:
  int fd_;
};

}  // namespace

bool wait_for_file_change(const std::filesystem::path& file, int exited_fd, const std::function<bool()>& ready,
                          std::chrono::milliseconds timeout) {
  const inotify_watch watch(file);  // before the first check: a write between the two is not missed
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (ready()) return true;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    std::array<pollfd, 2> fds{pollfd{watch.fd(), POLLIN, 0}, pollfd{exited_fd, POLLIN, 0}};
    const int n = ::poll(fds.data(), exited_fd >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n > 0 && (fds[1].revents & POLLIN) != 0) return ready();  // exited: what it wrote is all there is
    watch.drain();
  }
}

}  // namespace outbox::test

#include "tests/support/engine_signal.hpp"

namespace outbox::test {

void engine_signal::raise() {
  {
    std::lock_guard lock(mutex_);
    ++count_;
  }
  raised_.notify_all();
}

bool engine_signal::wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::uint64_t seen = 0;
    {
      std::lock_guard lock(mutex_);
      seen = count_;
    }
    if (done()) return true;
    std::unique_lock lock(mutex_);
    if (!raised_.wait_until(lock, deadline, [&] { return count_ != seen; })) {
      lock.unlock();
      return done();
    }
  }
}

std::string signalled_log::text() const {
  std::lock_guard lock(mutex_);
  return text_;
}

std::streambuf::int_type signalled_log::overflow(std::streambuf::int_type c) {
  using traits = std::streambuf::traits_type;
  if (c == traits::eof()) return traits::not_eof(c);
  const char ch = traits::to_char_type(c);
  (void)xsputn(&ch, 1);
  return c;
}

std::streamsize signalled_log::xsputn(const char* s, std::streamsize n) {
  bool line = false;
  {
    std::lock_guard lock(mutex_);
    text_.append(s, static_cast<std::size_t>(n));
    line = std::string_view(s, static_cast<std::size_t>(n)).find('\n') != std::string_view::npos;
  }
  if (line) signal_.raise();
  return n;
}

}  // namespace outbox::test

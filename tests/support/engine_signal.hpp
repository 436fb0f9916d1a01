#pragma once
// What a test waits on while an engine runs on its own thread (river's
// testsignal): the engine's store signals after each statement and its log
// after each line; wait_for() checks its condition again at each signal, never
// on a timer. The log is kept as text for the test to read.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

namespace outbox::test {

class engine_signal {
 public:
  // Something happened (a statement returned, a line was logged).
  void raise();
  // Checks `done` now and after each signal; false when `timeout` passed first.
  bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable raised_;
  std::uint64_t count_ = 0;
};

// A log sink that keeps the text and raises the signal at each line.
class signalled_log final : private std::streambuf, public std::ostream {
 public:
  explicit signalled_log(engine_signal& signal) : std::ostream(this), signal_(signal) {}
  [[nodiscard]] std::string text() const;

 private:
  std::streambuf::int_type overflow(std::streambuf::int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

  engine_signal& signal_;
  mutable std::mutex mutex_;
  std::string text_;
};

}  // namespace outbox::test

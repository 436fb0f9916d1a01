#pragma once
// A webhook receiver in a process of its own (bench/webhook_receiver.mjs, run
// by Node): what the `crm` scenario delivers to (--sink receiver). Its CPU is
// measured apart from the bench's, and it competes with PostgreSQL and the
// dispatcher for the cores as a receiver on the same machine would. The bench
// learns each request's webhook-id and arrival time (the monotonic clock, as
// steady_clock) from the lines the receiver writes to its stdout, read here
// by a thread of its own.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/event_sink.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::bench {

class receiver_process final : public event_sink {
 public:
  // Starts `node <script> cert key [secret]` (stderr to `log_path`) and waits
  // until it listens. Throws when Node is missing or the receiver does not start.
  receiver_process(const test::certificate_pem& cert, const std::string& secret, const std::string& log_path);
  ~receiver_process() override;  // closes its stdin (it exits), SIGKILL after 5 s
  receiver_process(const receiver_process&) = delete;
  receiver_process& operator=(const receiver_process&) = delete;

  [[nodiscard]] std::uint16_t port() const override { return port_; }
  [[nodiscard]] std::string url(std::string_view path) const override;
  [[nodiscard]] std::size_t count() const override { return count_.load(std::memory_order_acquire); }
  [[nodiscard]] std::size_t requests() const override { return count_.load() + refused_.load(); }
  [[nodiscard]] std::size_t connections() const override { return 0; }
  [[nodiscard]] std::vector<sink_hit> hits(std::size_t from = 0) const override;
  [[nodiscard]] pid_t process() const override { return pid_; }
  [[nodiscard]] std::size_t refused() const override { return refused_.load(); }

 private:
  void read_lines();  // the reader thread
  void take(const std::string& line);

  std::string dir_;  // the PEM files
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::uint16_t port_ = 0;
  std::string log_path_;
  mutable std::mutex mutex_;
  std::vector<sink_hit> hits_;
  std::atomic<std::size_t> count_{0}, refused_{0};
  std::thread reader_;
};

}  // namespace outbox::bench

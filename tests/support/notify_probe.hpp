#pragma once
// Counts the insert trigger's notifications, deterministically: a blocking
// LISTEN session, and a sentinel NOTIFY (on a channel of its own) sent after
// the statement under test.
// Notifications arrive in commit order, so once the sentinel is in, every
// notification the earlier commit sent is in too; no waiting for "nothing".
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace outbox::test {

class notify_probe {
 public:
  // LISTENs on `channel` in database `conninfo`.
  explicit notify_probe(const std::string& conninfo, std::string channel = "outbox_event_delivery");
  ~notify_probe();
  notify_probe(const notify_probe&) = delete;
  notify_probe& operator=(const notify_probe&) = delete;

  // Sends the sentinel from a separate session, then returns how many other
  // notifications arrived before it (and discards them). Throws when the
  // sentinel does not arrive within `timeout`.
  [[nodiscard]] int count_since_last(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The same, their payloads in order.
  [[nodiscard]] std::vector<std::string> payloads_since_last(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace outbox::test

#pragma once
// What a scenario reads from the HTTPS endpoint the dispatcher delivers to,
// whichever it is: the in-process lean sink (bench/lean_sink.hpp) or a
// receiver in a process of its own (bench/receiver_process.hpp).
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace outbox::bench {

struct sink_hit {
  std::string key;  // webhook-id or event_id; empty when the request had none
  std::chrono::steady_clock::time_point at;
  std::chrono::system_clock::time_point wall;  // the same instant, wall clock (to compare with created_at)
};

class event_sink {
 public:
  virtual ~event_sink() = default;
  [[nodiscard]] virtual std::uint16_t port() const = 0;  // on 127.0.0.1
  [[nodiscard]] virtual std::string url(std::string_view path) const = 0;
  [[nodiscard]] virtual std::size_t count() const = 0;        // events received so far (webhook: requests)
  [[nodiscard]] virtual std::size_t requests() const = 0;     // requests answered so far
  [[nodiscard]] virtual std::size_t connections() const = 0;  // TLS sessions established (0: not known)
  // A copy of the events from index `from` on, in arrival order.
  [[nodiscard]] virtual std::vector<sink_hit> hits(std::size_t from = 0) const = 0;
  // The process whose CPU is the sink's own, or -1 when it is this one.
  [[nodiscard]] virtual pid_t process() const { return -1; }
  // Requests the receiver refused (a bad signature, a body that is not JSON).
  [[nodiscard]] virtual std::size_t refused() const { return 0; }
};

}  // namespace outbox::bench

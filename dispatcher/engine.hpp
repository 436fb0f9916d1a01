#pragma once
// The dispatch engine: wake (LISTEN + poll + next-due timer), claim under a
// lease, send through each destination's provider, settle fenced by the lease
// token, renew leases of rows in flight, sweep expired leases, and shut down
// gracefully. One io_context thread; concurrency comes from coroutines.
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "db/connection.hpp"
#include "db/delivery_store.hpp"
#include "db/listener.hpp"
#include "db/operations_store.hpp"
#include "dispatcher/adaptive_wake.hpp"
#include "dispatcher/config.hpp"
#include "dispatcher/destinations.hpp"
#include "dispatcher/log.hpp"
#include "dispatcher/metrics.hpp"
#include "dispatcher/settlement_plan.hpp"
#include "providers/https_client.hpp"

namespace outbox {


class engine {
 public:
  engine(boost::asio::any_io_executor ex, const config& cfg, logger& log);
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  ~engine();

  // Runs until request_stop() and the graceful drain complete. Database
  // outages are survived (reconnect with backoff); only programming errors throw.
  boost::asio::awaitable<void> async_run();
  // Stop claiming; finish in-flight sends within the grace period; give back the rest.
  void request_stop();

  // Metrics with live gauges filled in, for /metrics.
  [[nodiscard]] outbox::metrics metrics_snapshot() const;
  // Ready when the last database round trip worked and, in listen mode, LISTEN is up.
  [[nodiscard]] std::pair<bool, std::string> readiness() const;
  [[nodiscard]] const std::string& instance_id() const noexcept { return instance_id_; }
  [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_.size(); }

 private:
  struct in_flight_row {
    row_ticket ticket;
    std::string provider;
    std::string destination;
    bool started = false;    // request bytes may be on the wire
    bool abandoned = false;  // given back at shutdown; a late result is ignored
  };

  boost::asio::awaitable<void> async_claim_loop();
  boost::asio::awaitable<void> async_load_pauses();
  boost::asio::awaitable<void> async_settle_loop();
  boost::asio::awaitable<void> async_maintenance_loop();
  // One request's worth of work: the verdict and what to log about the attempt.
  struct exchange {
    providers::batch_outcome verdict;
    attempt_facts facts;
  };
  boost::asio::awaitable<void> async_send_batch(destination& dest, std::vector<providers::outbound_event> events);
  boost::asio::awaitable<exchange> async_exchange(destination& dest,
                                                  const std::vector<providers::outbound_event>& events);
  [[nodiscard]] auto send_done();
  boost::asio::awaitable<void> async_idle(std::chrono::steady_clock::duration max_wait,
                                          std::chrono::steady_clock::duration floor);
  boost::asio::awaitable<void> async_idle(std::chrono::steady_clock::duration max_wait);
  // Adaptive wake mode: publish what adaptive_wake decided, on the claim connection.
  boost::asio::awaitable<void> async_publish_wake(adaptive_wake::action a);
  boost::asio::awaitable<void> async_read_wake_mode(db::connection& conn);
  boost::asio::awaitable<bool> async_ensure(std::optional<db::connection>& conn, const char* role);
  boost::asio::awaitable<void> async_pause_for(std::chrono::steady_clock::duration d);

  void dispatch(std::vector<db::claimed_row> rows);
  void put_back(const std::vector<providers::outbound_event>& events, std::chrono::milliseconds delay,
                const std::string& outcome, const std::string& reason);
  void enqueue(db::settlement s);
  void wake();
  void on_listener_event(const db::listener_event& e);
  void record(const db::settlement& s);
  void note_health(destination& dest, const exchange& ex, std::chrono::system_clock::time_point now);
  void apply_operator_pauses(const std::vector<db::destination_pause>& pauses);
  [[nodiscard]] double random01();
  // Completion handler for a background coroutine: counts it and logs a crash.
  [[nodiscard]] auto track(const char* what);

  boost::asio::any_io_executor ex_;
  const config& cfg_;
  logger& log_;
  std::string instance_id_;
  providers::https_client http_;
  destination_registry destinations_;
  std::optional<db::listener> listener_;
  adaptive_wake wake_signal_;

  std::optional<db::connection> claim_conn_;
  std::optional<db::connection> settle_conn_;
  std::optional<db::connection> maintenance_conn_;

  std::unordered_map<std::int64_t, in_flight_row> in_flight_;
  std::deque<db::settlement> settle_queue_;
  std::size_t active_sends_ = 0;
  std::size_t background_running_ = 0;
  std::vector<boost::asio::steady_timer*> rate_waits_;  // cancelled at shutdown

  boost::asio::steady_timer wake_timer_;
  boost::asio::steady_timer settle_timer_;
  boost::asio::steady_timer maintenance_timer_;
  boost::asio::steady_timer drain_timer_;
  bool wake_pending_ = false;
  bool capacity_blocked_ = false;
  bool any_operator_pause_ = false;      // some destination is paused by on-call
  bool pause_reload_requested_ = false;  // a NOTIFY may mean `resume`: re-read pauses now
  bool stopping_ = false;
  bool settle_stop_ = false;
  bool settle_done_ = false;
  std::chrono::steady_clock::time_point settle_deadline_{};
  std::mt19937_64 random_;
  outbox::metrics metrics_;
};

}  // namespace outbox

#pragma once
// The dispatch engine: a small coordinator that wires its parts (river's split):
//   claimer      wake (LISTEN + poll + next-due timer), claim under a lease   claimer.hpp
//   sender       route, limit, send through each destination's provider        sender.hpp
//   settler      record outcomes, fenced by the lease token, surviving faults  settler.hpp
//   maintenance  renew leases, sweep, pauses, wake mode, gauges, policies      maintenance.hpp
//   reconciler   read back asynchronous processing results (Data Manager)     reconciler.hpp
// One io_context thread; concurrency comes from coroutines.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "db/pg_store.hpp"
#include "db/store_port.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/claimer.hpp"
#include "dispatcher/engine/clock_timer.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/engine/engine_ports.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "dispatcher/engine/in_flight.hpp"
#include "dispatcher/engine/maintenance.hpp"
#include "dispatcher/engine/reconciler.hpp"
#include "dispatcher/engine/registry_entries.hpp"
#include "dispatcher/engine/sender.hpp"
#include "dispatcher/engine/settler.hpp"
#include "dispatcher/ops/log.hpp"
#include "dispatcher/ops/metrics.hpp"
#include "providers/http/https_client.hpp"

namespace outbox {

// Whether the claim's commit may skip its WAL flush wait
// (OUTBOX_CLAIM_SYNCHRONOUS_COMMIT, db::pg_store_options::claims_skip_flush_wait).
[[nodiscard]] bool claims_may_skip_flush_wait(const config& cfg, const destination_registry& destinations);

class engine {
 public:
  engine(boost::asio::any_io_executor ex, const config& cfg, logger& log, engine_ports ports = {});
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
  void on_listener_event(const db::listener_event& e);
  void act_on_signals(const std::string& signals);
  void forgotten_lead(std::string_view lead);
  boost::asio::awaitable<void> async_drain();
  boost::asio::awaitable<void> async_wait_until(bool (engine::*done)() const,
                                                std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] bool sends_done() const { return sender_.active() == 0; }
  [[nodiscard]] bool tasks_done() const { return background_running_ == 0; }
  [[nodiscard]] bool settler_done() const { return settler_finished_; }
  void start(const char* what, boost::asio::awaitable<void> task, bool* finished = nullptr);

  std::unique_ptr<db::pg_store> own_store_;  // when no store was given
  db::delivery_store& store_;
  const config& cfg_;
  // What the parts share (one loop thread, no locking): the runtime (loop,
  // clock, log, metrics), the destinations and the rows in flight.
  outbox::metrics metrics_;
  engine_runtime rt_;
  const std::string instance_id_;
  destination_registry destinations_;
  const registry_keys registry_keys_;
  in_flight_table in_flight_;
  bool stopping_ = false;
  std::unique_ptr<providers::https_client> own_http_;  // when no transport was given
  settler settler_;
  sender sender_;
  claimer claimer_;
  maintenance maintenance_;
  reconciler reconciler_;
  std::unique_ptr<db::store_listener> listener_;
  clock_timer drain_timer_;
  std::size_t background_running_ = 0;
  bool settler_finished_ = false;
};

}  // namespace outbox

#pragma once
// Records outcomes: a queue of settlements flushed in batches on the settle
// connection. An outcome stays queued until the database has it or the row's
// lease is certainly gone (another worker owns it):
//  - a lost connection loses a result, not a fact: reconnect and send the same
//    fenced settle again (rows it had already recorded are recognised);
//  - each flush takes the row's current lease token, so a row this process
//    re-claimed after an outage settles under its new lease;
//  - a batch the server rejects for a row's data (SQLSTATE classes 22, 23, 54) is
//    split until the bad row is alone; that row is settled with a plain
//    message, and the rest go on;
//  - any other refusal (read-only after a failover, disk full, a cancel, a lock
//    or statement timeout, a deadlock) keeps every outcome: the same settle goes
//    again after a back-off (250 ms doubling to 5 s) on a new connection;
//  - after an idle spell, outcomes gather for OUTBOX_SETTLE_WINDOW_MS (or until
//    64 wait, or until no request is still out) so that a trickle shares
//    statements and commits; while more rows wait for a destination's slots
//    than outcomes are held, for up to 20 ms after each settle as well.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/delivery_store.hpp"
#include "dispatcher/engine/clock_timer.hpp"
#include "dispatcher/engine/db_link.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "dispatcher/engine/in_flight.hpp"
#include "dispatcher/engine/part_options.hpp"

namespace outbox {

// How the settler tells the claimer that rows left the in-flight table.
struct claimer_signals {
  std::function<void()> wake;            // a retry was recorded: look for rows now
  std::function<void()> capacity_freed;  // only room: look again if waiting for it
};

class settler {
 public:
  settler(engine_runtime rt, settler_options options, db::delivery_store& store,
          const destination_registry& destinations, in_flight_table& in_flight, const std::string& instance_id,
          claimer_signals claimer);

  // Queues an outcome (one per row: a newer one replaces a waiting one), with
  // the labels of its metrics and log line: the facts travel with the outcome.
  void enqueue(db::settlement s, metrics::destination_key labels);
  [[nodiscard]] std::size_t waiting() const noexcept { return queue_.size(); }

  // Runs until stop() and the queue is empty (or the drain deadline passed).
  boost::asio::awaitable<void> async_run();
  // Flush what is queued, then return; give up on what is left at `deadline`.
  void stop(std::chrono::steady_clock::time_point deadline);

 private:
  // refused: the database refused the statement for a reason of its own (not a
  // row's data): nothing was recorded, the outcomes stay queued.
  enum class flush_result { done, connection_lost, refused };
  // behind_slots: the wait after a settle while rows wait for destination slots.
  boost::asio::awaitable<void> async_gather(std::chrono::steady_clock::duration window, bool behind_slots);
  boost::asio::awaitable<void> async_wait_after_refusal();
  boost::asio::awaitable<flush_result> async_flush(db::store_session& conn, std::vector<db::settlement> batch);
  boost::asio::awaitable<flush_result> async_flush_alone(db::store_session& conn, db::settlement s);
  [[nodiscard]] std::vector<db::settlement> next_batch();
  [[nodiscard]] bool requests_out() const;
  [[nodiscard]] bool worth_gathering() const;
  void apply(std::span<const db::settlement> batch, const db::settle_report& report);
  void finish(const db::settlement& s);
  void record(const db::settlement& s);

  engine_runtime rt_;
  const settler_options options_;
  const destination_registry& destinations_;
  in_flight_table& in_flight_;
  const std::string& instance_id_;
  claimer_signals claimer_;
  db_link link_;
  std::deque<std::int64_t> order_;  // row ids, oldest first
  struct queued_outcome {
    db::settlement settlement;
    metrics::destination_key labels;  // the row's provider and destination, or "unknown"
  };
  std::unordered_map<std::int64_t, queued_outcome> queue_;
  clock_timer timer_;
  bool stop_ = false;
  bool behind_slots_ = false;
  bool gathering_ = false;                               // in the settle window: only a full window's worth wakes it
  std::chrono::steady_clock::duration refusal_delay_{};  // the last wait after a refusal; zero after a success
  bool backing_off_ = false;                             // waiting out refusal_delay_: outcomes only queue
  std::chrono::steady_clock::time_point deadline_{};
};

}  // namespace outbox

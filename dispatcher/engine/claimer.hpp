#pragma once
// The fetch loop (river's producer): waits for a reason to look (notification,
// poll, next-due timer, capacity freed, a pause ending), claims due rows under
// a fresh lease token and hands them to the sender. Paused and probing
// destinations are left out of the claim; when an automatic pause ends, one
// row of that destination is claimed alone as a probe. After its connection is
// replaced, rows this process claimed but never learnt of (the answer was lost)
// are released at once instead of a lease later.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "dispatcher/engine/adaptive_wake.hpp"
#include "dispatcher/engine/claim_scan_mark.hpp"
#include "dispatcher/engine/clock_timer.hpp"
#include "dispatcher/engine/db_link.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "dispatcher/engine/in_flight.hpp"
#include "dispatcher/engine/part_options.hpp"
#include "dispatcher/engine/sender.hpp"

namespace outbox {

class claimer {
 public:
  // `stopping` turns true when the engine stops (no claim after that).
  claimer(engine_runtime rt, claimer_options options, db::delivery_store& store, destination_registry& destinations,
          const in_flight_table& in_flight, const std::string& instance_id, const bool& stopping, sender& send);

  // Runs until the engine stops; withdraws an awake mark on the way out.
  boost::asio::awaitable<void> async_run();
  // Look for rows now.
  void wake();
  // The claim connection's session settings changed: it is opened again before the next claim.
  void reconnect_before_next_claim() { reconnect_ = true; }
  // In-flight rows finished: look again only if waiting for room to claim.
  void capacity_freed();
  // The database's wake mode (read by the maintenance loop): adaptive or not.
  void set_adaptive(bool adaptive, const std::string& mode);
  [[nodiscard]] bool awake() const noexcept { return wake_signal_.awake(); }
  // "provider/destination" of the destinations the claim leaves out now (paused, circuit open).
  [[nodiscard]] std::vector<std::string> skipped_destinations() const;
  // Up to base + per destination x (destinations with unsent rows) rows in the skipped
  // destinations, the claim is one ordered scan that steps over them (claimer.cpp).
  static constexpr std::int64_t skipped_rows_base = 2000;
  static constexpr std::int64_t skipped_rows_per_destination = 40;
  [[nodiscard]] bool few_rows_in(const std::vector<std::string>& skipped) const;

 private:
  [[nodiscard]] boost::asio::awaitable<bool> async_release_orphans(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_probe(db::store_session& conn, std::size_t& capacity);
  [[nodiscard]] boost::asio::awaitable<std::optional<std::size_t>> async_claim(db::store_session& conn,
                                                                               std::size_t capacity, bool& full);
  boost::asio::awaitable<void> async_wait_next();
  [[nodiscard]] boost::asio::awaitable<bool> async_gather_capacity(std::size_t capacity);
  boost::asio::awaitable<void> async_publish(adaptive_wake::action a);
  boost::asio::awaitable<void> async_idle(std::chrono::steady_clock::duration max_wait,
                                          std::chrono::steady_clock::duration floor);
  boost::asio::awaitable<void> async_wait_for_capacity(std::chrono::steady_clock::duration max_wait,
                                                       std::chrono::steady_clock::duration floor);
  [[nodiscard]] db::claim_request request(std::size_t limit) const;
  [[nodiscard]] std::optional<std::chrono::steady_clock::duration> until_a_pause_ends() const;

  engine_runtime rt_;
  const claimer_options options_;
  destination_registry& destinations_;
  const in_flight_table& in_flight_;
  const std::string& instance_id_;
  const bool& stopping_;
  sender& sender_;
  db_link link_;
  adaptive_wake wake_signal_;
  clock_timer timer_;
  claim_scan_mark scan_mark_;
  bool wake_pending_ = false;
  bool waiting_for_capacity_ = false;
  std::uint64_t orphans_checked_generation_ = 0;
  bool claim_sent_ = false;  // a claim or probe went out on some connection
  // What the last claim said about the next due row (db::claim_batch::next_due).
  std::optional<std::optional<std::chrono::milliseconds>> next_due_;
  bool reconnect_ = false;
  bool last_claim_full_ = false;  // the backlog goes on: more rows are due than were claimed
  std::optional<std::chrono::steady_clock::time_point> gather_until_;
};

}  // namespace outbox

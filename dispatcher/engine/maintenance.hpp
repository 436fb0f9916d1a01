#pragma once
// The maintenance loop (river's rescuer and friends), on its own connection:
// renews the leases of every row in flight (including rows whose outcome waits
// for the database, and through the shutdown grace), sweeps expired leases,
// re-reads on-call pauses and the wake mode, refreshes the queue gauges, and
// records this dispatcher's destination policies for `dispatcher sweep`, its
// heartbeat (with its automatic pauses) and the delivery lag per destination.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/operations_store.hpp"
#include "dispatcher/engine/claimer.hpp"
#include "dispatcher/engine/clock_timer.hpp"
#include "dispatcher/engine/db_link.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "dispatcher/engine/in_flight.hpp"
#include "dispatcher/engine/part_options.hpp"
#include "dispatcher/engine/registry_entries.hpp"

namespace outbox {

class maintenance {
 public:
  // `keys` open the registry's sealed secrets.
  maintenance(engine_runtime rt, maintenance_options options, db::delivery_store& store,
              destination_registry& destinations, const registry_keys& keys, const in_flight_table& in_flight,
              const std::string& instance_id, const bool& stopping, claimer& claim);

  // Reads pauses and the wake mode once, before the first claim (a paused
  // destination must get nothing, not even one claim).
  boost::asio::awaitable<void> async_prepare();
  // Runs until stop(): lease renewal goes on while the engine drains.
  boost::asio::awaitable<void> async_run();
  void stop();
  // A notification may mean `dispatcher resume` or `pause`: re-read pauses now.
  void reload_pauses();
  // The registry changed (a notification), or a row names a destination not known here: re-read it now.
  void reload_registry();
  // These registry entries ("provider/name") changed (a notification named them): read them now.
  void reload_registry_entries(const std::vector<std::string>& keys);
  [[nodiscard]] bool any_on_call_pause() const noexcept { return any_on_call_pause_; }

 private:
  [[nodiscard]] boost::asio::awaitable<bool> async_renew(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_sweep(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_refresh(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_erase_personal_data(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_read_wake_mode(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_read_gauges(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_load_pauses(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_record_policies(db::store_session& conn);
  void apply_on_call_pauses(const std::vector<db::destination_pause>& pauses);
  // maintenance_registry.cpp: the destinations of the registry, applied.
  [[nodiscard]] boost::asio::awaitable<bool> async_read_registry(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_read_registry_entries(db::store_session& conn);
  boost::asio::awaitable<void> async_registry_applied(db::store_session& conn, const registry_changes& changes,
                                                      bool first_read);
  void log_registry_changes(const registry_changes& changes);
  void log_unusable_at_start();
  // maintenance_fleet.cpp: "retry now" for automatic pauses, the heartbeat, the delivery lag.
  [[nodiscard]] boost::asio::awaitable<bool> async_apply_resume_requests(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_fleet_refresh(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<bool> async_heartbeat(db::store_session& conn);
  // Re-reads the live dispatchers into the metrics (the /status page lists them).
  boost::asio::awaitable<void> async_read_fleet(db::store_session& conn);
  boost::asio::awaitable<void> async_goodbye();

  engine_runtime rt_;
  const maintenance_options options_;
  destination_registry& destinations_;
  registry_interpreter registry_;
  const in_flight_table& in_flight_;
  const std::string& instance_id_;
  const bool& stopping_;
  claimer& claimer_;
  db_link link_;
  clock_timer timer_;
  bool stop_ = false;
  bool reload_requested_ = false;
  bool registry_reload_requested_ = false;
  bool registry_read_ = false;                      // read once since start (before the first claim)
  std::set<std::string> registry_keys_requested_;   // entries a notification named, to read
  std::vector<db::destination_pause> last_pauses_;  // on-call pauses as last read, for destinations added since
  std::set<std::string> shadowed_told_;             // registry entries the environment overrides, logged once each
  bool any_on_call_pause_ = false;
  bool policies_recorded_ = false;
  std::string resume_marker_;    // newest resume request acted on (database time); empty before the first read
  bool fleet_supported_ = true;  // false on a schema before 0006: no heartbeat, no resume requests
  const std::chrono::system_clock::time_point started_at_;
};

}  // namespace outbox

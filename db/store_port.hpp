#pragma once
// The delivery store as the engine sees it (river's driver interface): every
// statement the engine runs, behind one port with two implementations, the
// PostgreSQL one (db/pg_store.hpp) and an in-memory one for engine tests
// (tests/support/memory_store.hpp). Both pass one conformance suite
// (tests/db/store_conformance.hpp), so the test double keeps PostgreSQL's
// semantics: fencing by lease token, skip-locked claims, lease expiry, paused
// destinations left alone, idempotent enqueue.
//
// A session is one role's connection (claim, settle, maintenance, reconciler).
// A call on a lost connection fails with a db::error whose connection_lost() is
// true: what it did is unknown (it may have committed), and the next
// async_connect() opens a new connection. Names are taken by value; what a
// call takes by reference or span must outlive it (await the call in the
// expression that makes it, as the engine does).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "db/delivery_store.hpp"
#include "db/destination_registry_store.hpp"
#include "db/error.hpp"
#include "db/fleet_store.hpp"
#include "db/listener.hpp"
#include "db/operations_store.hpp"
#include "db/personal_data_store.hpp"
#include "db/request_status_store.hpp"

namespace outbox::db {

template <class T>
using async_outcome = boost::asio::awaitable<outcome<T>>;

class store_session {
 public:
  virtual ~store_session() = default;

  // Opens a connection unless one is open. Each success after none was open is a new connection.
  [[nodiscard]] virtual async_outcome<void> async_connect() = 0;
  [[nodiscard]] virtual bool connected() const = 0;
  // Forgets the connection (after a refusal that calls for a new one).
  virtual void drop() = 0;

  // --- deliveries (db/delivery_store.hpp says what each does) ---
  [[nodiscard]] virtual async_outcome<claim_batch> async_claim_batch(const claim_request& req) = 0;
  [[nodiscard]] virtual async_outcome<std::vector<claimed_row>> async_claim(const claim_request& req) = 0;
  [[nodiscard]] virtual async_outcome<settle_report> async_settle(std::string owner,
                                                                  std::span<const settlement> batch) = 0;
  [[nodiscard]] virtual async_outcome<std::int64_t> async_renew(std::span<const std::int64_t> ids,
                                                                std::span<const std::string> tokens,
                                                                std::chrono::seconds lease) = 0;
  [[nodiscard]] virtual async_outcome<std::vector<std::int64_t>> async_release_orphans(
      std::string owner, std::span<const std::string> held_tokens) = 0;
  [[nodiscard]] virtual async_outcome<std::vector<swept_row>> async_sweep(const sweep_request& req) = 0;
  [[nodiscard]] virtual async_outcome<std::optional<std::chrono::milliseconds>> async_next_due(
      std::span<const std::string> skip_destinations) = 0;
  [[nodiscard]] virtual async_outcome<void> async_record_policies(std::string owner,
                                                                  std::span<const destination_policy> policies) = 0;

  // --- pauses, gauges and the fleet (db/operations_store.hpp, db/fleet_store.hpp) ---
  [[nodiscard]] virtual async_outcome<std::vector<destination_pause>> async_list_pauses() = 0;
  // Resume requests newer than `since`, which moves to the newest one read.
  [[nodiscard]] virtual async_outcome<std::vector<resume_request>> async_resume_requests(std::string& since) = 0;
  [[nodiscard]] virtual async_outcome<queue_gauges> async_queue_gauges(std::vector<std::string> paused) = 0;
  [[nodiscard]] virtual async_outcome<std::vector<destination_lag>> async_delivery_lag() = 0;
  [[nodiscard]] virtual async_outcome<void> async_beat(const heartbeat& beat) = 0;
  [[nodiscard]] virtual async_outcome<void> async_goodbye(std::string instance) = 0;
  [[nodiscard]] virtual async_outcome<nlohmann::json> async_fleet() = 0;

  // --- destinations kept in the database (db/destination_registry_store.hpp) ---
  [[nodiscard]] virtual async_outcome<registry_read> async_read_registry() = 0;
  // --- personal data (db/personal_data_store.hpp) ---
  [[nodiscard]] virtual async_outcome<std::int64_t> async_erase_expired_personal_data(const retention_request& req) = 0;
  [[nodiscard]] virtual async_outcome<std::vector<registry_entry>> async_read_registry_entries(
      std::vector<std::string> keys) = 0;
  [[nodiscard]] virtual async_outcome<std::int64_t> async_make_rows_due(std::string provider,
                                                                        std::string destination) = 0;

  // --- the wake mode (db/wake_signal.hpp) ---
  [[nodiscard]] virtual async_outcome<std::string> async_wake_mode() = 0;
  [[nodiscard]] virtual async_outcome<void> async_publish_awake(std::string instance,
                                                                std::chrono::milliseconds ttl) = 0;
  [[nodiscard]] virtual async_outcome<void> async_publish_asleep(std::string instance) = 0;

  // --- processing results read back later (db/request_status_store.hpp) ---
  [[nodiscard]] virtual async_outcome<std::vector<due_request>> async_take_due_requests(
      std::size_t limit, std::chrono::seconds hold_for) = 0;
  [[nodiscard]] virtual async_outcome<std::int64_t> async_record_request_check(const request_check& check) = 0;
};

// Notifications of new rows (a hint: the claim loop polls too).
class store_listener {
 public:
  virtual ~store_listener() = default;
  // Runs until stop(); reconnects by itself.
  [[nodiscard]] virtual boost::asio::awaitable<void> async_run() = 0;
  virtual void stop() = 0;
  [[nodiscard]] virtual bool is_listening() const = 0;
};

class delivery_store {
 public:
  virtual ~delivery_store() = default;
  // A session for one role ("claim", "settle", "maintenance", "reconciler").
  [[nodiscard]] virtual std::unique_ptr<store_session> open_session(const std::string& role) = 0;
  [[nodiscard]] virtual std::unique_ptr<store_listener> make_listener(const std::string& channel,
                                                                      std::chrono::seconds heartbeat,
                                                                      listener::handler on_event) = 0;
};

}  // namespace outbox::db

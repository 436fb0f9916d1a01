#pragma once
// The delivery store in memory, for engine tests in virtual time: the same
// semantics as PostgreSQL (db/pg_store.hpp), checked case by case by one
// conformance suite run against both (tests/db/store_conformance.hpp).
// Time is its clock's (a manual clock): leases expire and rows come due as the
// test advances it. Every call is atomic, as each statement is one short
// transaction; a row under a lease is never handed out twice, which is all
// SKIP LOCKED promises the engine.
//
// Faults are scripted: a call can fail before it does anything, or do its work
// and then lose its answer with the connection (the hard case of a settle or a
// claim); connections can all be broken, and connects refused.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "db/store_port.hpp"
#include "dispatcher/engine/clock.hpp"

namespace outbox::test {

// One event_delivery row.
struct memory_row {
  std::int64_t id = 0;
  std::int64_t lead_project_id = 0;
  std::string provider;
  std::string destination = "default";
  std::string event_name;
  std::string idempotency_key;
  std::string payload;
  std::string state = "pending";
  int attempts = 0;
  engine_clock::system_time next_attempt_at;
  std::optional<std::string> lease_owner;
  std::optional<std::string> lease_token;
  std::optional<engine_clock::system_time> lease_expires_at;
  std::optional<engine_clock::system_time> sent_at;
  std::string last_error;
  std::optional<int> last_http_status;
  std::string provider_response;
  engine_clock::system_time created_at;
  engine_clock::system_time updated_at;
  std::optional<engine_clock::system_time> personal_data_erased_at;
  std::string personal_data_erased_why;

  [[nodiscard]] bool open() const { return state == "pending" || state == "sending"; }
  [[nodiscard]] std::string key() const { return provider + "/" + destination; }
};

// One event_delivery_attempt row (what the tests read of it).
struct memory_attempt {
  std::int64_t delivery_id = 0;
  int attempt = 0;
  std::string outcome;
  std::optional<int> http_status;
  std::string error;
  std::string lease_owner;
  std::string note;
  std::string request_id;
};

// A scripted failure of the next call named `op` ("claim", "settle", "renew",
// "connect", ...): the call fails with `failure`; with `applied`, it does its
// work first and loses the answer (the failure must then be a lost connection).
struct memory_fault {
  std::string op;
  db::error failure{db::error_kind::connection, "connection lost (scripted)"};
  bool applied = false;
};

class memory_store final : public db::delivery_store {
 public:
  explicit memory_store(engine_clock& clock);

  // --- the CRM's side ---
  // enqueue_event_delivery: true when inserted, false when (lead, provider, event) exists already.
  bool enqueue(std::int64_t lead_project_id, const std::string& provider, const std::string& event_name,
               const std::string& payload, const std::string& destination = "default",
               const std::string& idempotency_key = {});
  // outbox_idempotency_key: the key enqueue gives when none is passed (the same as PostgreSQL's).
  [[nodiscard]] static std::string idempotency_key(std::int64_t lead_project_id, const std::string& provider,
                                                   const std::string& event_name);
  // On-call: `dispatcher pause` / `resume` (the notification is up to the test).
  void pause(const std::string& provider, const std::string& destination, const std::string& reason,
             const std::string& by = "on-call");
  void resume(const std::string& provider, const std::string& destination);
  // A CRM transaction left open after its insert: the row stays invisible until
  // commit(id), and the trigger's choice to notify (or not) is made now and
  // delivered at the commit, as PostgreSQL does. Returns the row's id.
  std::int64_t enqueue_uncommitted(std::int64_t lead_project_id, const std::string& provider,
                                   const std::string& event_name, const std::string& payload = "{}");
  void commit(std::int64_t id);
  // NOTIFY on the wake channel (enqueue sends one by itself, as the trigger does).
  void notify(const std::string& payload = {});
  // `dispatcher resume` of an automatic pause ("retry now").
  void request_resume(const std::string& provider, const std::string& destination);
  // outbox_wake_config.mode: always, adaptive (inserts skip the notification
  // while a dispatcher is marked awake) or off.
  std::string wake_mode = "always";
  // The registry's entries (sql/0010_destination_registry.sql); a test changes them, then
  // notifies with db::destinations_changed_payload or lets the periodic re-read find them.
  std::vector<db::registry_entry> registry;
  // Notifications sent so far.
  [[nodiscard]] int notifications() const { return notifications_; }

  // --- what tests read ---
  [[nodiscard]] const memory_row* find(std::int64_t id) const;
  [[nodiscard]] memory_row& row(std::int64_t id);
  [[nodiscard]] std::vector<std::int64_t> ids() const;
  [[nodiscard]] std::int64_t count(const std::string& state) const;
  [[nodiscard]] std::vector<memory_attempt> attempts(std::int64_t id) const;
  // Dispatchers marked awake now (outbox_dispatcher_awake, not yet expired).
  [[nodiscard]] std::set<std::string> awake() const;
  // provider_request: the status recorded for a request a provider accepted
  // ("" before a final one), and how many times it was read.
  [[nodiscard]] std::pair<std::string, int> request_status(const std::string& request_id) const;
  // Every claim request, in order (which statement PostgreSQL would have run).
  std::vector<db::claim_request> claim_requests;
  // Calls made, by op name: the signal a test waits on instead of a poll.
  [[nodiscard]] int calls(const std::string& op) const;
  // Runs after every call (the store's test signal): a test may stop the io_context there.
  std::function<void(const std::string& op)> on_call = [](const std::string&) {};

  // --- faults ---
  void fail_next(memory_fault fault) { faults_.push_back(std::move(fault)); }
  // Every open session loses its connection; calls fail until they reconnect.
  void break_connections() { ++connection_epoch_; }
  // While set, connects fail.
  bool refuse_connects = false;

  // --- the port ---
  [[nodiscard]] std::unique_ptr<db::store_session> open_session(const std::string& role) override;
  [[nodiscard]] std::unique_ptr<db::store_listener> make_listener(const std::string& channel,
                                                                  std::chrono::seconds heartbeat,
                                                                  db::listener::handler on_event) override;

 private:
  friend class memory_session;
  friend class memory_statements;

  engine_clock& clock_;
  std::map<std::int64_t, memory_row> rows_;
  std::vector<memory_attempt> attempts_;
  std::int64_t next_id_ = 1;
  std::map<std::string, db::destination_policy> policies_;
  std::map<std::string, db::destination_pause> pauses_;
  std::vector<std::pair<std::int64_t, db::resume_request>> resume_requests_;
  std::int64_t resume_sequence_ = 0;
  std::map<std::string, db::heartbeat> heartbeats_;
  std::map<std::string, engine_clock::system_time> awake_;           // instance -> awake_until
  std::map<std::int64_t, std::pair<memory_row, bool>> uncommitted_;  // the row, and whether its commit notifies
  int notifications_ = 0;
  // The trigger's choice: notify unless a dispatcher is draining in adaptive mode, or the mode is off.
  [[nodiscard]] bool insert_notifies() const;
  memory_row new_row(std::int64_t lead_project_id, const std::string& provider, const std::string& event_name,
                     const std::string& payload, const std::string& destination, const std::string& idempotency_key);
  struct provider_request {
    std::string provider, destination, request_id, status;
    std::int64_t rows = 0;
    int checks = 0;
    engine_clock::system_time accepted_at, next_check_at;
  };
  std::vector<provider_request> requests_;
  std::deque<memory_fault> faults_;
  std::map<std::string, int> calls_;
  std::uint64_t connection_epoch_ = 0;
  std::vector<db::listener::handler> listeners_;
};

}  // namespace outbox::test

#pragma once
// The delivery store on PostgreSQL: each session is one libpq connection with
// its role's settings (db/delivery_sql.hpp), each call one of the statements in
// delivery_store.hpp, operations_store.hpp, fleet_store.hpp, wake_signal.hpp and
// request_status_store.hpp, and the listener a LISTEN connection of its own.
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "db/store_port.hpp"

namespace outbox::db {

struct pg_store_options {
  std::string conninfo;  // empty: the libpq environment
  // The claim's commit does not wait for its WAL flush (OUTBOX_CLAIM_SYNCHRONOUS_COMMIT=off):
  // a claim lost in a crash only makes its rows due again, resent under the same key.
  bool claims_skip_flush_wait = false;
  std::chrono::seconds connect_timeout{5};
  // Server-side bound for every statement of the engine: none is meant to run
  // longer than a few milliseconds; a stuck one must not hold locks for long.
  std::chrono::seconds statement_timeout{30};
  // Called after each statement of a session returned (river's test signal):
  // tests wait on it instead of polling. Unset in a dispatcher process.
  std::function<void()> after_statement;
};

class pg_store final : public delivery_store {
 public:
  pg_store(boost::asio::any_io_executor ex, pg_store_options options);

  [[nodiscard]] std::unique_ptr<store_session> open_session(const std::string& role) override;
  [[nodiscard]] std::unique_ptr<store_listener> make_listener(const std::string& channel,
                                                              std::chrono::seconds heartbeat,
                                                              listener::handler on_event) override;
  // The connection under a session of this store (nullptr when none is open):
  // for tests and diagnostics that read the session's settings.
  [[nodiscard]] static connection* connection_of(store_session& session);
  // Read at each connect: set it before the first.
  // Applies to claim connections opened from now on.
  void set_claims_skip_flush_wait(bool skip) { options_.claims_skip_flush_wait = skip; }
  [[nodiscard]] bool claims_skip_flush_wait() const { return options_.claims_skip_flush_wait; }

 private:
  boost::asio::any_io_executor ex_;
  pg_store_options options_;
};

}  // namespace outbox::db

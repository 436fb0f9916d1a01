#pragma once
// What the store conformance suite (tests/db/store_conformance.hpp) needs of a
// store besides its port: rows written as the CRM writes them, rows read back,
// and time moved on (a manual clock in memory; timestamps moved back on
// PostgreSQL, whose now() cannot be held still). Two harnesses, one per store.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "db/pg_store.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/memory_store.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::test {

// A row as the suite checks it.
struct stored_row {
  std::string state;
  int attempts = 0;
  std::string lease_owner;  // empty when none
  bool has_token = false;
  std::string last_error;
  std::optional<int> last_http_status;
  bool due = false;  // next_attempt_at <= now
};

// Runs `make(executor)`'s awaitable on `io` to completion and returns its value.
template <class Make>
auto run_on(boost::asio::io_context& io, Make make) {
  auto fut = boost::asio::co_spawn(io, make(io.get_executor()), boost::asio::use_future);
  io.restart();
  io.run();
  return fut.get();
}

class memory_harness {
 public:
  memory_harness() : clock_(io_), store_(clock_) {}
  [[nodiscard]] db::delivery_store& store() { return store_; }
  [[nodiscard]] boost::asio::io_context& io() { return io_; }
  // enqueue_event_delivery; the row's id, or nullopt when (lead, provider, event) existed.
  std::optional<std::int64_t> enqueue(std::int64_t lead, const std::string& provider, const std::string& event,
                                      const std::string& payload = "{}", const std::string& destination = "default");
  [[nodiscard]] stored_row read(std::int64_t id);
  [[nodiscard]] std::string idempotency_key(std::int64_t id) { return store_.row(id).idempotency_key; }
  [[nodiscard]] long long attempts_logged(std::int64_t id, const std::string& outcome);
  // Time moves on by `d` for every lease and schedule.
  void pass(std::chrono::seconds d) { clock_.advance(d); }
  void pause(const std::string& provider, const std::string& destination) { store_.pause(provider, destination, "x"); }

 private:
  boost::asio::io_context io_;
  manual_clock clock_;
  memory_store store_;
};

class pg_harness {
 public:
  pg_harness() : store_(io_.get_executor(), db::pg_store_options{db_.conninfo()}) {}
  [[nodiscard]] db::delivery_store& store() { return store_; }
  [[nodiscard]] boost::asio::io_context& io() { return io_; }
  std::optional<std::int64_t> enqueue(std::int64_t lead, const std::string& provider, const std::string& event,
                                      const std::string& payload = "{}", const std::string& destination = "default");
  [[nodiscard]] stored_row read(std::int64_t id);
  [[nodiscard]] std::string idempotency_key(std::int64_t id);
  [[nodiscard]] long long attempts_logged(std::int64_t id, const std::string& outcome);
  // now() cannot move: every stored time moves back by `d` instead.
  void pass(std::chrono::seconds d);
  void pause(const std::string& provider, const std::string& destination);

 private:
  scratch_database db_;
  boost::asio::io_context io_;
  db::pg_store store_;
};

}  // namespace outbox::test

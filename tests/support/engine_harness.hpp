#pragma once
// An engine running in this process against a scratch database and a local
// HTTPS server signed by a throwaway CA: what the engine tests drive.
#include <chrono>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "db/pg_store.hpp"
#include "tests/support/engine_signal.hpp"

#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/engine.hpp"
#include "dispatcher/ops/log.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::test {

// Polls `probe` until it returns true or `timeout` passes. For state that lives
// in another process or the database, where no event can be awaited.
bool eventually(const std::function<bool()>& probe, std::chrono::milliseconds timeout);

// Settings every test starts from: fast timers, one webhook destination.
[[nodiscard]] environment base_environment(const scratch_database& db, const test_https_server& server,
                                           const test_ca& ca);

class engine_harness {
 public:
  // `tweak` may change the environment before the configuration is loaded.
  explicit engine_harness(std::function<void(environment&)> tweak = {});
  ~engine_harness();

  void start();
  // Graceful stop; blocks until async_run returned.
  void stop();

  // Enqueues through the SQL function; returns the row id.
  std::int64_t enqueue(std::int64_t lead, const std::string& event, const std::string& payload = R"({"value": 1})",
                       const std::string& provider = "webhook", const std::string& destination = "default");
  [[nodiscard]] std::string state_of(std::int64_t id) const;
  // One column of the row as text ('' for NULL), and its attempts.
  [[nodiscard]] std::string column_of(std::int64_t id, const std::string& column) const;
  [[nodiscard]] long long attempts_of(std::int64_t id) const;
  // Waits until the row reaches `state`: checks after each statement the engine runs.
  [[nodiscard]] bool wait_state(std::int64_t id, const std::string& state,
                                std::chrono::milliseconds timeout = std::chrono::seconds(15)) const;
  [[nodiscard]] std::string logs() const;
  // Checks `done` now and again after each statement the engine runs and each
  // line it logs (tests/support/engine_signal.hpp); false when `timeout` passed first.
  bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) const {
    return signal_.wait_for(done, timeout);
  }
  // Claims so far that left paused destinations out (a debug log line each).
  [[nodiscard]] std::size_t skipped_claims() const;
  // Paused rows are never claimed, so there is no write to wait for: wait until
  // two more such claims ran (one surely began after the caller's row committed).
  [[nodiscard]] bool claims_skipped_paused_since(std::size_t count_before) const;
  // Claim statements the engine ran; read it after stop().
  [[nodiscard]] std::uint64_t claim_statements() const;
  // The engine's /metrics text; read it after stop().
  [[nodiscard]] std::string metrics_text() const;

  scratch_database db;
  test_pki pki;
  test_https_server server;
  config cfg;

 private:
  engine_signal signal_;
  signalled_log log_stream_{signal_};
  std::unique_ptr<logger> log_;
  boost::asio::io_context io_;
  // The engine's store, which raises signal_ after each statement it ran.
  std::unique_ptr<db::pg_store> store_;
  std::unique_ptr<engine> engine_;
  std::thread thread_;
  bool running_ = false;
};

}  // namespace outbox::test

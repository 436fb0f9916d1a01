#pragma once
// Reads back the processing result of requests a provider accepted and
// processes later (Google Data Manager: events:ingest answers with a request id;
// the result comes from its request-status endpoint 30 minutes to a day later).
// On its own connection and timer; started only when a configured destination
// has a status endpoint. A row is `sent` once its request was accepted; this
// records whether the provider then processed it (SUCCESS, PARTIAL_SUCCESS,
// FAILURE, or UNKNOWN when no final answer came in time).
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "db/request_status_store.hpp"
#include "dispatcher/engine/clock_timer.hpp"
#include "dispatcher/engine/db_link.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "dispatcher/engine/part_options.hpp"
#include "providers/http/https_client.hpp"

namespace outbox {

class reconciler {
 public:
  // Without a final status this long after acceptance, a request is recorded UNKNOWN.
  static constexpr std::chrono::hours give_up_after{48};
  // A status that could not be read (network, 5xx, 429) is asked again after this.
  static constexpr std::chrono::minutes unreadable_retry{5};
  // A request still PROCESSING is asked again after its destination's
  // status_check_delay doubled at each read (30 min, 1 h, 2 h, ...), at most this
  // far apart: Google processes within 24 h, so a request costs about 7 reads at most.
  static constexpr std::chrono::hours widest_interval{8};
  // RESOURCE_EXHAUSTED with no RetryInfo: the project's reads wait this long at most,
  // doubling from the unreadable retry delay at each refusal in a row.
  static constexpr std::chrono::hours longest_quota_pause{1};

  // The wait before the next read of a request read `reads` times before, still processing.
  [[nodiscard]] static std::chrono::seconds processing_interval(std::chrono::seconds delay, int reads);

  reconciler(engine_runtime rt, reconciler_options options, db::delivery_store& store,
             destination_registry& destinations, providers::http_transport* http);

  // True when some destination can report processing results.
  [[nodiscard]] static bool needed(const destination_registry& destinations);
  boost::asio::awaitable<void> async_run();
  void stop();

 private:
  [[nodiscard]] providers::http_transport& transport() {
    return given_http_ ? *given_http_ : static_cast<providers::http_transport&>(*http_);
  }
  [[nodiscard]] boost::asio::awaitable<void> async_check_due(db::store_session& conn);
  [[nodiscard]] boost::asio::awaitable<db::request_check> async_check(const db::due_request& due);
  void note(const db::request_check& check, std::int64_t rows);
  // RESOURCE_EXHAUSTED (providers::request_status::quota_exhausted): every request
  // of `scope` waits, however many are due.
  struct quota_pause {
    std::chrono::steady_clock::time_point until;
    std::chrono::seconds last{0};  // the pause before, doubled at the next refusal in a row
  };
  void pause_scope(const std::string& scope, std::chrono::seconds retry_delay, std::chrono::seconds first);
  [[nodiscard]] std::optional<std::chrono::seconds> scope_paused(const std::string& scope) const;

  engine_runtime rt_;
  const reconciler_options options_;
  db_link link_;
  destination_registry& destinations_;
  providers::http_transport* given_http_;  // an engine test's transport; else its own client, made when it runs
  // Made when the reconciler runs: its trust store costs 0.7 MB, and most
  // deployments have no destination to reconcile.
  std::optional<providers::https_client> http_;
  clock_timer timer_;
  std::map<std::string, quota_pause> quota_pauses_;  // by status_quota_scope()
  bool stop_ = false;
};

}  // namespace outbox

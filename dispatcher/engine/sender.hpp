#pragma once
// Sends claimed rows: routes each to its destination (or rejects it before any
// request), respects each destination's gate, concurrency and rate limits, runs
// one exchange per batch (token, request, verdict) and hands every outcome to
// the settler. Knows HTTP through the providers and the database through
// nothing but the settler's queue.
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/delivery_store.hpp"
#include "dispatcher/engine/clock_timer.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "dispatcher/engine/part_options.hpp"
#include "dispatcher/engine/settler.hpp"
#include "providers/http/http_transport.hpp"

namespace outbox {

class sender {
 public:
  // `wake_claimer` asks the claimer to look for rows now (a row put back is due again).
  sender(engine_runtime rt, sender_options options, destination_registry& destinations, in_flight_table& in_flight,
         const bool& stopping, std::function<void()> wake_claimer, settler& settle, providers::http_transport& http);

  // Takes claimed rows into flight and starts their requests. `probe`: the row
  // was claimed alone to test a destination whose pause ended.
  void dispatch(std::vector<db::claimed_row> rows, bool probe);
  // Requests running or waiting for a slot.
  [[nodiscard]] std::size_t active() const noexcept { return active_; }
  // Shutdown: wake everything waiting for a slot or a rate token (they give their rows back).
  void stop();
  // These leads were forgotten (a notification of outbox_forget_lead()): their
  // rows still waiting for a slot or a rate token here are not sent.
  void forget_leads(const std::vector<std::int64_t>& leads);
  // After the grace period: requests still running are abandoned; their rows
  // are settled now (held on hold destinations, pending otherwise).
  void abandon_running();
  void close_idle() { http_.close_idle(); }
  // Called when a request task finishes (the engine's drain waits on it).
  std::function<void()> on_task_done = [] {};

 private:
  struct exchange {
    providers::batch_outcome verdict;
    attempt_facts facts;
  };
  static constexpr const char* unknown_label = "unknown";  // metric label for rows naming no configured destination

  // sender_route.cpp
  [[nodiscard]] std::optional<db::settlement> route(const db::claimed_row& row, bool probe,
                                                    std::shared_ptr<destination>& dest);
  [[nodiscard]] static bool could_be_created(const db::claimed_row& row);
  void forget_unknown_rows_seen_before(std::chrono::system_clock::time_point before);
  [[nodiscard]] db::settlement plan_without_destination(const db::claimed_row& row, const row_ticket& ticket,
                                                        std::chrono::system_clock::time_point now);
  [[nodiscard]] std::string unknown_destination_error(const db::claimed_row& row) const;
  void spawn(std::shared_ptr<destination> dest, std::vector<providers::outbound_event> events);
  void note_client_errors(destination& dest, const exchange& ex, std::chrono::system_clock::time_point now);
  std::vector<bool> resend_groups(destination& dest, const std::vector<providers::outbound_event>& events,
                                  const providers::batch_outcome& verdict);
  boost::asio::awaitable<void> async_send_batch(std::shared_ptr<destination> kept,
                                                std::vector<providers::outbound_event> events);
  boost::asio::awaitable<bool> async_wait_turn(destination& dest);
  boost::asio::awaitable<exchange> async_exchange(destination& dest,
                                                  const std::vector<providers::outbound_event>& events);
  // What one exchange uses from start to end (async_exchange's snapshot).
  struct exchange_settings {
    const providers::provider& provider;
    providers::oauth_token_source* tokens;  // nullptr without OAuth
  };
  boost::asio::awaitable<bool> async_request(const destination& dest, exchange_settings with,
                                             const std::vector<providers::outbound_event>& events, exchange& ex);
  void judge(destination& dest, std::vector<providers::outbound_event> events, exchange ex);
  void note_health(destination& dest, const exchange& ex, std::span<const std::int64_t> rows,
                   std::chrono::system_clock::time_point now, bool probe);
  void put_back(const std::vector<providers::outbound_event>& events, std::chrono::milliseconds delay,
                const std::string& outcome, const std::string& reason);
  [[nodiscard]] bool drop_forgotten(std::vector<providers::outbound_event>& events);
  void settle(db::settlement s);
  // Fields a provider dropped from one row: a warning and outbox_fields_dropped_total.
  void note_dropped(const destination& dest, std::int64_t row_id, const providers::dropped_fields& dropped);
  // What the attempts log keeps of one event: dropped fields, match keys once
  // delivered (and their coverage metric), the request id of asynchronous providers.
  void attach_event_facts(const destination& dest, std::int64_t row_id, const providers::batch_outcome& verdict,
                          const providers::event_outcome& outcome, db::settlement& s);
  void note_warnings(const destination& dest, std::int64_t row_id, const providers::dropped_fields& warnings,
                     db::settlement& s);
  [[nodiscard]] static std::vector<std::string> dropped_texts(const providers::dropped_fields& dropped);
  [[nodiscard]] double random01();
  // The same outcome for each of `n` events (a request that never got a per-event verdict).
  [[nodiscard]] static std::vector<providers::event_outcome> every_event(std::size_t n, providers::outcome_kind kind,
                                                                         const std::string& error) {
    return std::vector<providers::event_outcome>(n, providers::event_outcome{kind, error, {}});
  }

  engine_runtime rt_;
  const sender_options options_;
  destination_registry& destinations_;
  in_flight_table& in_flight_;
  const bool& stopping_;
  std::function<void()> wake_claimer_;
  settler& settler_;
  providers::http_transport& http_;
  std::size_t active_ = 0;
  std::vector<clock_timer*> rate_waits_;  // cancelled at shutdown
  // Rows naming no known destination, and when this process first saw each (sender_route.cpp).
  struct unknown_row_seen {
    std::chrono::system_clock::time_point since;  // a registry read must start after this
    bool past_grace = false;                      // `since` is a look after the grace
  };
  std::unordered_map<std::int64_t, unknown_row_seen> unknown_seen_;
  std::size_t unknown_seen_prune_at_ = 10000;
  // Leads forgotten lately, and when this process heard of it.
  std::map<std::int64_t, std::chrono::steady_clock::time_point> forgotten_leads_;
  static constexpr std::chrono::hours forgotten_kept{1};
  std::mt19937_64 random_;
};

}  // namespace outbox

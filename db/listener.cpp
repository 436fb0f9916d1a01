#include "db/listener.hpp"

#include <algorithm>
#include <set>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db/destination_registry_store.hpp"
#include "db/fleet_store.hpp"

namespace outbox::db {
namespace {
constexpr const char* heartbeat_sql = "SELECT 1";
}  // namespace

listener::listener(asio::any_io_executor ex, listener_options options, handler on_event)
    : ex_(ex), options_(std::move(options)), on_event_(std::move(on_event)), backoff_timer_(ex) {}

void listener::emit(listener_event::kind type, bool reconnected, std::string detail) {
  if (on_event_) on_event_(listener_event{type, reconnected, std::move(detail)});
}

void listener::stop() {
  stopped_ = true;
  backoff_timer_.cancel();
  if (conn_) conn_->close();  // wakes a pending wait with an error
}

asio::awaitable<void> listener::async_run() {
  auto delay = options_.reconnect_delay_min;
  while (!stopped_) {
    try {
      co_await async_listen_session();
    } catch (const error& e) {
      const bool was_listening = listening_;
      listening_ = false;
      conn_.reset();
      if (stopped_) break;
      if (was_listening) delay = options_.reconnect_delay_min;
      emit(listener_event::kind::lost, false, e.what());
    }
    if (stopped_) break;
    backoff_timer_.expires_after(delay);
    (void)co_await backoff_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    delay = std::min(delay * 2, options_.reconnect_delay_max);
  }
  listening_ = false;
  conn_.reset();
}

asio::awaitable<void> listener::async_listen_session() {
  connect_options named;  // like the engine's other connections, found by name in pg_stat_activity
  named.application_name = "outbox-dispatcher listener";
  auto c = co_await connection::async_connect(ex_, options_.conninfo, options_.connect_timeout, named);
  if (stopped_) co_return;
  conn_.emplace(std::move(c));
  co_await conn_->async_exec_script("LISTEN " + quote_identifier(options_.channel), options_.heartbeat_timeout);
  listening_ = true;
  const bool reconnected = ever_listened_;
  if (reconnected) ++reconnects_;
  ever_listened_ = true;
  emit(listener_event::kind::listening, reconnected, {});

  while (!stopped_) {
    const bool input = co_await conn_->async_wait_input(options_.heartbeat_interval);
    if (!input) {
      // Quiet for a while: prove the connection is alive (half-open TCP looks idle forever).
      (void)co_await conn_->async_query(heartbeat_sql, {}, options_.heartbeat_timeout);
    }
    bool notified = false;
    bool pauses = false;
    bool destinations = false;
    std::set<std::string> changed;    // payloads naming one registry entry each
    std::set<std::string> forgotten;  // payloads naming one forgotten lead each
    for (const auto& n : conn_->take_notifications()) {
      if (n.channel != options_.channel) continue;
      notified = true;
      pauses |= n.payload == pauses_changed_payload;
      destinations |= n.payload == destinations_changed_payload;
      if (n.payload.starts_with(destination_changed_prefix)) changed.insert(n.payload);
      if (n.payload.starts_with(lead_forgotten_prefix)) forgotten.insert(n.payload);
    }
    // Many entries at once (a bulk change): one read of the whole registry costs less.
    if (changed.size() > max_changed_destinations) destinations = true;
    std::string signals = pauses ? std::string{pauses_changed_payload} : "";
    if (destinations) signals.append(signals.empty() ? "" : ",").append(destinations_changed_payload);
    for (const auto& payload : changed) {
      if (!destinations) signals.append(signals.empty() ? "" : ",").append(payload);
    }
    for (const auto& payload : forgotten) signals.append(signals.empty() ? "" : ",").append(payload);
    if (notified) emit(listener_event::kind::notification, false, std::move(signals));
  }
}

}  // namespace outbox::db

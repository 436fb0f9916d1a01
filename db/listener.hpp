#pragma once
// LISTEN on a dedicated connection. Notifications are hints, so the listener's
// job is to say "look now": on every notification, and after every (re)connect
// (notifications sent while disconnected are gone, so callers catch up then).
// A heartbeat query detects a dead connection that TCP alone would not notice.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "db/connection.hpp"

namespace outbox::db {

struct listener_options {
  std::string conninfo;  // empty: the libpq environment
  std::string channel = "outbox_event_delivery";
  clock::duration connect_timeout = std::chrono::seconds(5);
  clock::duration heartbeat_interval = std::chrono::seconds(10);  // idle time before a heartbeat query
  clock::duration heartbeat_timeout = std::chrono::seconds(5);
  clock::duration reconnect_delay_min = std::chrono::milliseconds(100);
  clock::duration reconnect_delay_max = std::chrono::seconds(5);
};

// NOTIFY payload of outbox_forget_lead() (sql/0017): this prefix, then the lead id.
inline constexpr std::string_view lead_forgotten_prefix = "outbox:forgotten:";

// More registry entries than this changed at once: the whole registry is read.
inline constexpr std::size_t max_changed_destinations = 64;

struct listener_event {
  enum class kind {
    listening,     // LISTEN is active; `reconnected` tells whether an earlier session was lost
    notification,  // a NOTIFY arrived on the channel
    lost,          // the connection broke; `detail` says why; reconnect follows
  };
  kind type = kind::notification;
  bool reconnected = false;
  // lost: why. notification: the signals among the notifications, comma-separated:
  // pauses_changed_payload (a `dispatcher pause` or `resume`),
  // destinations_changed_payload (the registry changed: read all of it), or
  // destination_changed_prefix + "provider/name" for each entry that changed
  // (up to max_changed_destinations; more become destinations_changed_payload),
  // lead_forgotten_prefix + lead id for each lead forgotten; else empty.
  std::string detail;
};

class listener {
 public:
  using handler = std::function<void(const listener_event&)>;

  listener(asio::any_io_executor ex, listener_options options, handler on_event);

  // Runs until stop(). Never throws for database failures: it reconnects with backoff.
  asio::awaitable<void> async_run();
  // Ends async_run soon (at most connect_timeout if a connect is in progress).
  void stop();

  [[nodiscard]] bool is_listening() const noexcept { return listening_; }
  [[nodiscard]] int backend_pid() const noexcept { return conn_ ? conn_->backend_pid() : 0; }
  [[nodiscard]] int reconnects() const noexcept { return reconnects_; }

 private:
  asio::awaitable<void> async_listen_session();
  void emit(listener_event::kind type, bool reconnected, std::string detail);

  asio::any_io_executor ex_;
  listener_options options_;
  handler on_event_;
  std::optional<connection> conn_;
  asio::steady_timer backoff_timer_;
  bool stopped_ = false;
  bool listening_ = false;
  bool ever_listened_ = false;
  int reconnects_ = 0;
};

}  // namespace outbox::db

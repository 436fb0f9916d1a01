#pragma once
// The running dispatchers as the database sees them (sql/0006_fleet.sql): their
// heartbeats with automatic pauses, on-call's "retry now" for those pauses, the
// signal that makes every dispatcher re-read pauses at once, and the delivery
// lag per destination.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "db/connection.hpp"
#include "db/error.hpp"

namespace outbox::db {

// NOTIFY payload on the wake channel meaning "pauses changed: re-read them now".
inline constexpr std::string_view pauses_changed_payload = "outbox:pauses";

struct heartbeat {
  std::string instance;
  std::string version;
  std::string host;
  int pid = 0;
  std::chrono::system_clock::time_point started_at;
  std::chrono::seconds sweep_interval{15};
  nlohmann::json automatic_pauses = nlohmann::json::array();  // [{"provider", "destination", "reason", "until"}]
};

[[nodiscard]] boost::asio::awaitable<outcome<void>> async_beat(connection& conn, const heartbeat& beat);
// At a clean stop: the heartbeat goes, so `status` and `resume` stop counting
// this instance at once rather than 3 sweep intervals later.
[[nodiscard]] boost::asio::awaitable<outcome<void>> async_goodbye(connection& conn, const std::string& instance);

struct resume_request {
  std::string provider;
  std::string destination;
};

// Resume requests newer than `since` (a timestamp from the previous call; empty
// on the first, which only learns the database's clock). `since` is updated.
[[nodiscard]] boost::asio::awaitable<outcome<std::vector<resume_request>>> async_resume_requests(connection& conn,
                                                                                                 std::string& since);

struct destination_lag {
  std::string provider;
  std::string destination;
  double seconds = 0;     // age by created_at of the oldest row not yet delivered (pending or sending)
  std::int64_t rows = 0;  // pending and sending rows
};

[[nodiscard]] boost::asio::awaitable<outcome<std::vector<destination_lag>>> async_delivery_lag(connection& conn);

// --- for the on-call commands (they throw db::error) ---

// The destination is configured on a dispatcher (its recorded policy) or named by a row.
[[nodiscard]] boost::asio::awaitable<bool> async_known_destination(connection& conn, const std::string& provider,
                                                                   const std::string& destination);
// Every listening dispatcher re-reads pauses now.
[[nodiscard]] boost::asio::awaitable<void> async_signal_pauses(connection& conn);
// Records a "retry now" for the destination and signals it; returns how many live
// dispatchers report an automatic pause of it.
[[nodiscard]] boost::asio::awaitable<std::int64_t> async_request_resume(connection& conn, const std::string& provider,
                                                                        const std::string& destination,
                                                                        const std::string& by);
// Live dispatchers (seen within three sweep intervals) and the others, newest first:
// [{"instance", "version", "host", "pid", "started_at", "last_seen", "live", "automatic_pauses"}].
[[nodiscard]] boost::asio::awaitable<nlohmann::json> async_fleet(connection& conn);

}  // namespace outbox::db

#pragma once
// Requests a provider accepted and processes later (Google Data Manager): which
// are due for a status check, and what the check found (sql/0005, provider_request).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"
#include "db/error.hpp"

namespace outbox::db {

struct due_request {
  std::string provider;
  std::string destination;
  std::string request_id;
  int checks = 0;                // status checks made before this one
  std::int64_t age_seconds = 0;  // since the provider accepted it
};

// Takes up to `limit` requests due for a check and moves their next check
// `hold_for` ahead, so another dispatcher does not check them at the same time.
[[nodiscard]] boost::asio::awaitable<outcome<std::vector<due_request>>> async_take_due_requests(
    connection& conn, std::size_t limit, std::chrono::seconds hold_for);

struct request_check {
  std::string provider;
  std::string destination;
  std::string request_id;
  std::string status;  // PROCESSING, SUCCESS, PARTIAL_SUCCESS, FAILURE, UNKNOWN; empty: unchanged (not readable now)
  std::string detail;
  std::chrono::seconds next_check{0};  // for PROCESSING or unchanged
  bool read = true;                    // false: postponed without asking (not counted in `checks`)
};

// Records one check; returns the request's row count (0 when it is gone).
[[nodiscard]] boost::asio::awaitable<outcome<std::int64_t>> async_record_request_check(connection& conn,
                                                                                       const request_check& check);

}  // namespace outbox::db

#pragma once
// What `dispatcher status` reports about the conversions themselves, per
// provider/destination: match-key coverage and dropped fields over the
// delivered attempts of the last 24 hours, and the processing results the
// provider reported for the requests it accepted in the last 7 days
// (sql/0005_conversion_facts.sql).
#include <span>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "db/connection.hpp"

namespace outbox::db {

// A JSON array, one object per provider/destination with delivered attempts in
// the last 24 h or provider_request rows in the last 7 days:
//   provider, destination, delivered (attempts),
//   match_keys [{key, attempts}]: every name of `match_keys` in that order (0
//     included, so a gap shows), then any other key found, by name;
//   dropped_total, dropped [{field, reason, count}] (top 5 by count);
//   provider_requests: null, or {by_status: {PENDING..UNKNOWN: {requests, rows}},
//     last_problem: null or the latest PARTIAL_SUCCESS/FAILURE/UNKNOWN request
//     {request_id, status, detail, checked_at, row_count}}.
[[nodiscard]] boost::asio::awaitable<nlohmann::json> async_conversion_report(connection& conn,
                                                                             std::span<const std::string> match_keys);

}  // namespace outbox::db

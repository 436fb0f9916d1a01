#pragma once
// Personal data in the dispatcher's tables (sql/0013_personal_data.sql): a
// lead's rows forgotten on request, and final rows' data erased once their
// retention is over.
#include <chrono>
#include <cstdint>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"
#include "db/error.hpp"

namespace outbox::db {

struct forget_report {
  std::int64_t rows_erased = 0;     // rows of the lead, every state
  std::int64_t rows_closed = 0;     // of them not final before: now dead, never sent
  std::int64_t rows_in_flight = 0;  // of those, with a request out: not sent again
};

// outbox_forget_lead(): every row of the lead loses its personal data; rows not
// sent yet are closed. With dry_run, counts only. Throws db::error (a command).
[[nodiscard]] boost::asio::awaitable<forget_report> async_forget_lead(connection& conn, std::int64_t lead_project_id,
                                                                      const std::string& requested_by, bool dry_run);

// Records that `accessed_by` was shown the personal data of `what` (rows asked for
// by `dispatcher inspect --show-personal-data`). Throws db::error (a command).
[[nodiscard]] boost::asio::awaitable<void> async_record_personal_data_access(connection& conn,
                                                                             const std::string& accessed_by,
                                                                             const std::string& what);

struct retention_request {
  std::chrono::seconds sent_after{86400};      // a sent row's data goes this long after it was sent
  std::chrono::seconds dead_after{7 * 86400};  // a dead or held row's, this long after it became so
  int batch = 200;                             // about 20 ms a statement, so no enqueue waits long for a row it locks
};

// Erases the personal data of up to `batch` final rows past their retention
// (rows another session holds are skipped, never waited for). Returns how many.
[[nodiscard]] boost::asio::awaitable<outcome<std::int64_t>> async_erase_expired_personal_data(
    connection& conn, const retention_request& req);

}  // namespace outbox::db

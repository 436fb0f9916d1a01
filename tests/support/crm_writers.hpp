#pragma once
// The CRM's write path under load, for tests: several connections enqueueing
// rows concurrently through enqueue_event_delivery.
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace outbox::test {

// `writers` connections insert concurrently, `per_statement` rows per
// statement (one transaction, at most one NOTIFY), leads first_lead onwards;
// payload {"lead": n, "value": n % 97, "currency": "EUR"}. Returns the
// problems met (empty on success).
std::vector<std::string> insert_concurrently(const std::string& conninfo, int writers, int rows_per_writer,
                                             int per_statement, long long first_lead);

// The CRM through faults: leads 1..rows, one row per transaction on a new
// connection (as a web request's), `gap` apart; an insert that fails (a
// terminated backend, a restart) is tried again every 20 ms, up to 500 times
// (about 10 s). `inserted` is the last lead done.
void insert_one_by_one(const std::string& conninfo, long long rows, std::atomic<long long>& inserted,
                       std::chrono::milliseconds gap);

}  // namespace outbox::test

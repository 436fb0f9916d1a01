#include "tests/support/crm_writers.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <libpq-fe.h>

#include "db/connection.hpp"
#include "tests/support/run_async.hpp"

namespace outbox::test {

using namespace std::chrono_literals;

std::vector<std::string> insert_concurrently(const std::string& conninfo, int writers, int rows_per_writer,
                                             int per_statement, long long first_lead) {
  std::mutex mutex;
  std::vector<std::string> problems;
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      try {
        run_async(
            [&](auto ex) -> boost::asio::awaitable<void> {
              auto conn = co_await outbox::db::connection::async_connect(ex, conninfo, 10s);
              const long long base = first_lead + static_cast<long long>(w) * rows_per_writer;
              for (int i = 0; i < rows_per_writer; i += per_statement) {
                const long long from = base + i;
                const long long to = base + std::min(i + per_statement, rows_per_writer) - 1;
                outbox::db::params args{std::to_string(from), std::to_string(to)};
                (void)co_await conn.async_query(
                    "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', "
                    "jsonb_build_object('lead', g, 'value', g % 97, 'currency', 'EUR')) "
                    "FROM generate_series($1::bigint, $2::bigint) AS g",
                    std::move(args), 30s);
              }
            },
            120s);
      } catch (const std::exception& e) {
        const std::lock_guard lock{mutex};
        problems.push_back("writer " + std::to_string(w) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return problems;
}

void insert_one_by_one(const std::string& conninfo, long long rows, std::atomic<long long>& inserted,
                       std::chrono::milliseconds gap) {
  // One connection kept (a new backend per row would halve the rate), made again after a fault.
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn{nullptr, &PQfinish};
  const auto insert = [&](long long lead) {
    if (!conn || PQstatus(conn.get()) != CONNECTION_OK) conn.reset(PQconnectdb(conninfo.c_str()));
    if (PQstatus(conn.get()) != CONNECTION_OK) return false;
    const std::string id = std::to_string(lead);
    const char* values[] = {id.c_str()};
    const std::unique_ptr<PGresult, decltype(&PQclear)> r{
        PQexecParams(conn.get(),
                     "SELECT enqueue_event_delivery($1::bigint, 'webhook', 'Lead', jsonb_build_object('lead', "
                     "$1::bigint))",
                     1, nullptr, values, nullptr, nullptr, 0),
        &PQclear};
    if (PQresultStatus(r.get()) == PGRES_TUPLES_OK) return true;
    conn.reset();
    return false;
  };
  for (long long lead = 1; lead <= rows; ++lead) {
    for (int tries = 0; tries < 500 && !insert(lead); ++tries) std::this_thread::sleep_for(20ms);
    inserted = lead;
    std::this_thread::sleep_for(gap);
  }
}

}  // namespace outbox::test

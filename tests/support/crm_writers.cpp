#include "tests/support/crm_writers.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

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

}  // namespace outbox::test

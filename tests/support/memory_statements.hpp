#pragma once
// The statements of the in-memory store (memory_store.hpp), each what its
// PostgreSQL twin in db/delivery_sql.hpp, db/operations_store.cpp,
// db/fleet_store.cpp, db/wake_signal.cpp and db/request_status_store.cpp does.
// No I/O: the session (memory_store.cpp) adds faults and the executor hop.
#include "tests/support/memory_store.hpp"

namespace outbox::test {

class memory_statements {
 public:
  explicit memory_statements(memory_store& s) : s_(s), now_(s.clock_.system_now()) {}

  [[nodiscard]] db::claim_batch claim(const db::claim_request& req);
  [[nodiscard]] db::settle_report settle(const std::string& owner, std::span<const db::settlement> batch);
  [[nodiscard]] std::int64_t renew(std::span<const std::int64_t> ids, std::span<const std::string> tokens,
                                   std::chrono::seconds lease);
  [[nodiscard]] std::vector<std::int64_t> release_orphans(const std::string& owner, std::span<const std::string> held);
  [[nodiscard]] std::vector<db::swept_row> sweep(const db::sweep_request& req);
  [[nodiscard]] std::optional<std::chrono::milliseconds> next_due(std::span<const std::string> skip,
                                                                  const std::set<std::int64_t>& picked = {});
  void record_policies(const std::string& owner, std::span<const db::destination_policy> policies);

  [[nodiscard]] std::vector<db::destination_pause> list_pauses();
  [[nodiscard]] std::vector<db::resume_request> resume_requests(std::string& since);
  [[nodiscard]] db::queue_gauges queue_gauges(const std::vector<std::string>& paused);
  [[nodiscard]] std::vector<db::destination_lag> delivery_lag();
  void beat(const db::heartbeat& beat);
  void goodbye(const std::string& instance);
  [[nodiscard]] nlohmann::json fleet();
  void publish_awake(const std::string& instance, std::chrono::milliseconds ttl);
  void publish_asleep(const std::string& instance);
  [[nodiscard]] std::vector<db::due_request> take_due_requests(std::size_t limit, std::chrono::seconds hold_for);
  [[nodiscard]] std::int64_t record_request_check(const db::request_check& check);
  [[nodiscard]] std::int64_t erase_expired_personal_data(const db::retention_request& req);

 private:
  [[nodiscard]] static std::pair<std::int64_t, std::int64_t> position_of(const memory_row& r);
  [[nodiscard]] std::optional<std::pair<std::int64_t, std::int64_t>> scan_start(const db::claim_request& req) const;
  void log(const memory_row& r, const db::settlement& s, std::string outcome, const std::string& owner);
  void apply(memory_row& r, const db::settlement& s);

  memory_store& s_;
  const engine_clock::system_time now_;
};

}  // namespace outbox::test

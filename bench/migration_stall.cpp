// migration-stall: what upgrading the schema costs the CRM's inserts (issue 30).
// A database at migration 0006 with --rows rows (99 % sent, 1 % pending, as a
// CRM's table after months), one CRM connection inserting a row every 5 ms
// with enqueue_event_delivery, then each remaining migration applied by the
// dispatcher's own migration code, one at a time: its duration and the longest
// insert during it. 0007 rewrites the table (CRM inserts wait for it); 0009
// builds its index CONCURRENTLY (inserts go on).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "bench/support.hpp"
#include "db/migrations.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

namespace outbox::bench {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace asio = boost::asio;

void load_crm_table(pg& conn, std::int64_t rows) {
  (void)conn.exec("SET synchronous_commit = off");
  constexpr std::int64_t chunk = 500000;
  for (std::int64_t from = 1; from <= rows; from += chunk) {
    const std::int64_t to = std::min(rows, from + chunk - 1);
    (void)conn.exec(
        "INSERT INTO event_delivery (lead_project_id, provider, event_name, idempotency_key, payload, state, "
        "sent_at, attempts) SELECT g, 'webhook', 'Lead', 'k-' || g, '{\"value\": 129.5, \"currency\": \"EUR\"}', "
        "CASE WHEN g % 100 = 0 THEN 'pending' ELSE 'sent' END, CASE WHEN g % 100 = 0 THEN NULL ELSE now() END, "
        "CASE WHEN g % 100 = 0 THEN 0 ELSE 1 END FROM generate_series($1::bigint, $2::bigint) g",
        {std::to_string(from), std::to_string(to)});
  }
  (void)conn.exec("SET synchronous_commit = on");
  (void)conn.exec("VACUUM ANALYZE event_delivery");
}

// Inserts a row every 5 ms on its own connection; keeps the longest insert
// since the last take().
class crm_inserter {
 public:
  explicit crm_inserter(const std::string& conninfo) : thread_([this, conninfo] { loop(conninfo); }) {}
  ~crm_inserter() {
    stop_ = true;
    thread_.join();
  }
  double take_longest_ms() {
    std::lock_guard lock(mutex_);
    return std::exchange(longest_ms_, 0.0);
  }
  std::int64_t inserted() const { return inserted_; }

 private:
  void loop(const std::string& conninfo) {
    pg conn(conninfo);
    conn.prepare("ins", "SELECT enqueue_event_delivery($1::bigint, 'webhook', 'Lead', '{\"value\": 1}')");
    for (std::int64_t id = 1'000'000'000'000; !stop_; ++id) {
      const auto t0 = steady::now();
      (void)conn.exec_prepared("ins", {std::to_string(id)});
      const double ms = ms_between(t0, steady::now());
      {
        std::lock_guard lock(mutex_);
        longest_ms_ = std::max(longest_ms_, ms);
      }
      ++inserted_;
      std::this_thread::sleep_for(5ms);
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> inserted_{0};
  std::mutex mutex_;
  double longest_ms_ = 0;
  std::thread thread_;
};

}  // namespace

json run_migration_stall(const options& o) {
  const std::int64_t rows = o.rows_given ? o.rows : 2'000'000;
  note("migration-stall: " + std::to_string(rows) + " rows at migration 0006");
  test::scratch_database db(false);
  const auto& all = db::embedded_migrations();
  std::vector<db::migration> applied;
  for (const auto& m : all) {
    applied.push_back(m);
    if (m.name == "0006_fleet.sql") break;
  }
  auto migrate = [&](const std::vector<db::migration>& list) {
    test::run_async(
        [&](auto ex) -> asio::awaitable<void> {
          auto c = co_await db::connection::async_connect(ex, db.conninfo(), 10s);
          (void)co_await db::async_migrate(c, list);
        },
        3600s);
  };
  migrate(applied);
  pg conn(db.conninfo());
  load_crm_table(conn, rows);
  json out;
  out["rows"] = rows;
  out["migrations"] = json::array();
  crm_inserter crm(db.conninfo());
  std::this_thread::sleep_for(1s);
  out["longest_insert_ms_before"] = crm.take_longest_ms();
  for (std::size_t i = applied.size(); i < all.size(); ++i) {
    applied.push_back(all[i]);
    const auto t0 = steady::now();
    migrate(applied);
    json step;
    step["name"] = all[i].name;
    step["seconds"] = seconds_between(t0, steady::now());
    step["longest_insert_ms"] = crm.take_longest_ms();
    note("migration-stall: " + all[i].name + " took " + fmt(step["seconds"].get<double>(), 2) + " s; longest insert " +
         fmt(step["longest_insert_ms"].get<double>(), 1) + " ms");
    out["migrations"].push_back(step);
  }
  out["inserts"] = crm.inserted();
  return out;
}

void print_migration_stall_summary(const json& result) {
  std::vector<std::vector<std::string>> table{{"migration", "seconds", "longest CRM insert ms"}};
  table.push_back({"(before)", "", fmt(num(result, "longest_insert_ms_before"), 1)});
  for (const auto& m : result["migrations"])
    table.push_back({m["name"].get<std::string>(), fmt(num(m, "seconds"), 2), fmt(num(m, "longest_insert_ms"), 1)});
  std::cout << "\n" << fmt(num(result, "rows")) << " rows in event_delivery\n" << format_table(table) << std::flush;
}

}  // namespace outbox::bench

// What the NOTIFY trigger costs the CRM: pgbench clients calling
// enqueue_event_delivery (one new row per transaction, autocommit), once with
// the trigger enabled and once disabled (poll-only). While pgbench runs, the
// backends' wait events are sampled from pg_stat_activity to show where the
// time goes (Lock:object is the instance-wide lock NOTIFY takes at commit).
#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>
#include <thread>

#include "bench/support.hpp"
#include "db/connection.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::bench {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char* enqueue_script =
    "\\set lead random(1, 1000000000000000)\n"
    "SELECT enqueue_event_delivery(:lead, 'webhook', 'Lead', "
    "'{\"action_source\": \"system_generated\", \"custom_data\": {\"currency\": \"EUR\", \"value\": 129.5}, "
    "\"event_name\": \"Lead\", \"event_time\": 1760000000, \"user_data\": {\"em\": "
    "\"7b17fb0bd173f625b58636fb796407c22b3d16fc78302d79f0fd30c2fc2fc068\"}}');\n";

// Samples wait events of the pgbench backends every 20 ms on its own connection.
class wait_sampler {
 public:
  wait_sampler(const std::string& conninfo, cluster_cpu& cluster)
      : cluster_(cluster), thread_([this, conninfo] { run(conninfo); }) {}
  ~wait_sampler() { stop(); }

  json stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::size_t total = 0;
    for (const auto& [k, n] : counts_) total += n;
    std::vector<std::pair<std::size_t, std::string>> sorted;
    for (const auto& [k, n] : counts_) sorted.emplace_back(n, k);
    std::sort(sorted.rbegin(), sorted.rend());
    json out = json::object();
    for (std::size_t i = 0; i < sorted.size() && i < 6; ++i)
      out[sorted[i].second] = total ? static_cast<double>(sorted[i].first) / static_cast<double>(total) : 0.0;
    return out;
  }

 private:
  void run(const std::string& conninfo) {
    try {
      pg conn(conninfo);
      conn.prepare("w",
                   "SELECT coalesce(wait_event_type || ':' || wait_event, 'running (no wait event)'), count(*) "
                   "FROM pg_stat_activity WHERE application_name = 'pgbench' AND backend_type = 'client backend' "
                   "GROUP BY 1");
      while (!stop_) {
        const auto r = conn.exec_prepared("w", {});
        for (int i = 0; i < PQntuples(r.get()); ++i) counts_[value(r, i, 0)] += std::stoul(value(r, i, 1));
        cluster_.refresh();  // backends that exit keep their last CPU figure
        std::this_thread::sleep_for(20ms);
      }
    } catch (const std::exception& e) {
      note(std::string("wait sampler: ") + e.what());
    }
  }

  std::atomic<bool> stop_{false};
  cluster_cpu& cluster_;
  std::map<std::string, std::size_t> counts_;
  std::thread thread_;
};

double match_number(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex(pattern))) return std::stod(m[1]);
  return -1;
}

}  // namespace

json run_trigger_cost(const options& o) {
  note("trigger cost: pgbench, " + std::to_string(o.clients) + " clients, " + std::to_string(o.trigger_seconds) +
       " s per mode (load " + std::to_string(load_average_1m()) + ")");
  test::scratch_database db;
  pg conn(db.conninfo());
  const std::string trigger = db::quote_identifier(o.trigger_name);
  if (conn.scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'event_delivery'::regclass AND tgname = $1",
                  {o.trigger_name}) != 1) {
    throw std::runtime_error("no trigger named " + o.trigger_name + " on event_delivery (use --trigger NAME)");
  }
  const std::string script_path = o.log_dir + "/enqueue.pgbench.sql";
  std::ofstream(script_path) << enqueue_script;

  json out;
  out["clients"] = o.clients;
  out["pgbench_threads"] = o.pgbench_threads;
  out["seconds"] = o.trigger_seconds;
  out["script"] = script_path;
  out["load_average_before"] = load_average_1m();
  for (const std::string mode : {"with_trigger", "without_trigger"}) {
    conn.exec("ALTER TABLE event_delivery " + std::string(mode == "with_trigger" ? "ENABLE" : "DISABLE") +
              " TRIGGER " + trigger);
    conn.exec("TRUNCATE event_delivery, event_delivery_attempt");
    conn.exec("CHECKPOINT");
    const std::string output = o.log_dir + "/pgbench-" + mode + ".log";
    cluster_cpu cluster(conn.backend_pid());
    const double pg0 = cluster.seconds();
    const auto m0 = machine_cpu::now();
    wait_sampler sampler(db.conninfo(), cluster);
    child_process bench(o.pgbench,
                        {"-n", "-M", "prepared", "-c", std::to_string(o.clients), "-j",
                         std::to_string(o.pgbench_threads), "-T", std::to_string(o.trigger_seconds), "-f",
                         script_path, db.name()},
                        child_environment({}), output);
    const auto report = bench.wait(std::chrono::seconds(o.trigger_seconds + 120));
    json waits = sampler.stop();
    const auto m1 = machine_cpu::now();
    const double pg1 = cluster.seconds();
    std::ifstream in(output);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!report.exited_ok) throw std::runtime_error("pgbench failed; see " + output + ":\n" + text);
    json r;
    r["inserts_per_second"] = match_number(text, R"(tps = ([0-9.]+) \(without initial connection time\))");
    r["latency_average_ms"] = match_number(text, R"(latency average = ([0-9.]+) ms)");
    r["failed_transactions"] = match_number(text, R"(number of failed transactions: ([0-9]+))");
    r["rows"] = conn.scalar("SELECT count(*) FROM event_delivery");
    r["wait_events"] = waits;
    r["postgres_cpu_seconds"] = pg1 - pg0;
    r["machine_busy_cores"] = (m1.busy - m0.busy) / static_cast<double>(o.trigger_seconds);
    r["pgbench_output"] = output;
    out[mode] = r;
    note("trigger cost: " + mode + ": " + std::to_string(r["inserts_per_second"].get<double>()) + " inserts/s");
  }
  conn.exec("ALTER TABLE event_delivery ENABLE TRIGGER " + trigger);
  const double with = out["with_trigger"]["inserts_per_second"].get<double>();
  const double without = out["without_trigger"]["inserts_per_second"].get<double>();
  out["ratio"] = without > 0 ? with / without : 0.0;
  return out;
}

}  // namespace outbox::bench

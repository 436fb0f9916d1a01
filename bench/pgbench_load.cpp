#include "bench/pgbench_load.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>
#include <thread>

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

std::string write_enqueue_script(const options& o) {
  const std::string path = o.log_dir + "/enqueue.pgbench.sql";
  std::ofstream(path) << enqueue_script;
  return path;
}

json run_enqueue_pgbench(const options& o, const test::scratch_database& db, pg& conn, const std::string& script,
                         int clients, int seconds, const std::string& label) {
  const std::string output = o.log_dir + "/pgbench-" + label + ".log";
  cluster_cpu cluster(conn.backend_pid());
  const double pg0 = cluster.seconds();
  const auto m0 = machine_cpu::now();
  wait_sampler sampler(db.conninfo(), cluster);
  const int threads = std::min(o.pgbench_threads, clients);  // pgbench refuses more threads than clients
  child_process bench(o.pgbench,
                      {"-n", "-M", "prepared", "-c", std::to_string(clients), "-j", std::to_string(threads), "-T",
                       std::to_string(seconds), "-f", script, db.name()},
                      child_environment({}), output);
  const auto report = bench.wait(std::chrono::seconds(seconds + 120));
  json waits = sampler.stop();
  const auto m1 = machine_cpu::now();
  const double pg1 = cluster.seconds();
  std::ifstream in(output);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!report.exited_ok) throw std::runtime_error("pgbench failed; see " + output + ":\n" + text);
  json r;
  r["clients"] = clients;
  r["inserts_per_second"] = match_number(text, R"(tps = ([0-9.]+) \(without initial connection time\))");
  r["latency_average_ms"] = match_number(text, R"(latency average = ([0-9.]+) ms)");
  r["failed_transactions"] = match_number(text, R"(number of failed transactions: ([0-9]+))");
  r["wait_events"] = waits;
  r["postgres_cpu_seconds"] = pg1 - pg0;
  r["machine_busy_cores"] = (m1.busy - m0.busy) / static_cast<double>(seconds);
  r["pgbench_output"] = output;
  return r;
}

}  // namespace outbox::bench

// fleet: the drain scenario with 1, 2 and 4 dispatcher processes against one
// database (--fleet), each the real `dispatcher run` under its own instance
// name, all sending to the one sink. What a second box buys, and what it costs
// the database.
#include <iostream>

#include "bench/dispatcher_harness.hpp"
#include "bench/support.hpp"

namespace outbox::bench {

using json = nlohmann::json;

json run_fleet(const options& o) {
  json out = json::array();
  for (const int n : o.fleet_sizes) {
    options f = o;
    f.dispatchers = n;
    note("fleet: " + std::to_string(n) + " dispatcher(s)");
    json run = run_throughput(f, true);
    run["dispatchers"] = n;
    out.push_back(std::move(run));
  }
  return out;
}

void print_fleet_summary(const json& fleet) {
  std::vector<std::vector<std::string>> rows{
      {"dispatchers", "drain rows/s", "PostgreSQL us/row", "dispatchers us/row", "duplicates / missing", "warnings"}};
  for (const auto& run : fleet) {
    const double n = num(run, "rows");
    rows.push_back({fmt(num(run, "dispatchers")), fmt(num(run, "rows_per_second")),
                    fmt(num(run["resources"], "postgres_cpu_seconds") / n * 1e6, 1),
                    fmt(num(run["resources"], "dispatcher_cpu_us_per_row"), 1),
                    fmt(num(run, "duplicates")) + " / " + fmt(num(run, "missing")),
                    describe_log_problems(run.value("dispatcher_log_problems", json::object()))});
  }
  std::cout << "\nfleet: drain of " << fmt(num(fleet[0], "rows")) << " rows\n" << format_table(rows) << std::flush;
}

}  // namespace outbox::bench

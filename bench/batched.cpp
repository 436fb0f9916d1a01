// batched: the throughput and drain scenarios with provider batching: `meta`
// rows (workload.hpp) sent to the sink speaking Meta's Conversions API, up to
// --meta-batch (1000) events per request. Unless given: --claim-batch 1000,
// --max-in-flight 2000, --rows 200000.
#include <iostream>
#include <set>

#include "bench/dispatcher_harness.hpp"
#include "bench/support.hpp"

namespace outbox::bench {

using json = nlohmann::json;

json run_batched(const options& o) {
  options b = o;
  b.provider = "meta";
  if (!b.claim_batch) b.claim_batch = 1000;
  if (!b.max_in_flight) b.max_in_flight = 2000;
  if (!b.rows_given) b.rows = 200000;
  note("batched: meta rows, batches of up to " + std::to_string(b.meta_batch) + " events, claim batch " +
       std::to_string(*b.claim_batch) + ", max in flight " + std::to_string(*b.max_in_flight));
  json out;
  out["meta_batch_size"] = b.meta_batch;
  out["claim_batch"] = *b.claim_batch;
  out["max_in_flight"] = *b.max_in_flight;
  out["ceiling"] = run_ceiling(b);  // same rows and claim batch, same run
  out["throughput"] = run_throughput(b, false);
  out["drain"] = run_throughput(b, true);
  return out;
}

void print_batched_summary(const json& b) {
  std::vector<std::vector<std::string>> rows{{"figure", "end to end", "drain"}};
  const auto both = [&](const std::string& figure, auto text) {
    rows.push_back({figure, text(b["throughput"]), text(b["drain"])});
  };
  both("rows/s", [](const json& t) { return fmt(num(t, "rows_per_second")) + " rows/s"; });
  both("events per request", [](const json& t) { return fmt(num(t, "events_per_request"), 1); });
  both("dispatcher CPU", [](const json& t) {
    return fmt(num(t["resources"], "dispatcher_cpu_us_per_row"), 1) + " us/row (" +
           fmt(num(t["resources"], "dispatcher_cores"), 2) + " cores)";
  });
  both("PostgreSQL CPU", [](const json& t) {
    return fmt(num(t["resources"], "postgres_cpu_seconds") / num(t, "rows") * 1e6, 1) + " us/row (" +
           fmt(num(t["resources"], "postgres_cores"), 2) + " cores)";
  });
  // PostgreSQL processes that used at least 1 us per row in either run.
  std::set<std::string> roles;
  for (const char* run : {"throughput", "drain"}) {
    for (const auto& [role, cpu] : b[run]["resources"]["postgres_cpu_seconds_by_process"].items()) {
      if (cpu.get<double>() / num(b[run], "rows") * 1e6 >= 1.0) roles.insert(role);
    }
  }
  for (const auto& role : roles) {
    both("  " + role, [&](const json& t) {
      return fmt(num(t["resources"]["postgres_cpu_seconds_by_process"], role.c_str()) / num(t, "rows") * 1e6, 1) +
             " us/row";
    });
  }
  both("sink + inserting client CPU", [](const json& t) {
    return fmt(num(t["resources"], "bench_process_cpu_seconds") / num(t, "rows") * 1e6, 1) + " us/row";
  });
  both("machine busy", [](const json& t) { return fmt(num(t["resources"], "machine_busy_cores"), 2) + " cores"; });
  both("dispatcher peak RSS", [](const json& t) { return fmt(num(t, "dispatcher_peak_rss_mb"), 1) + " MB"; });
  both("duplicates / missing",
       [](const json& t) { return fmt(num(t, "duplicates")) + " / " + fmt(num(t, "missing")); });
  both("dispatcher warnings",
       [](const json& t) { return describe_log_problems(t.value("dispatcher_log_problems", json::object())); });
  both("rows not sent", [](const json& t) {
    double sent = 0;
    for (const auto& [state, n] : t["states"].items()) sent += state == "sent" ? n.get<double>() : 0.0;
    return fmt(num(t, "rows") - sent);
  });
  std::cout << "\nbatched: " << fmt(num(b, "throughput", "rows")) << " meta rows, batch size "
            << fmt(num(b, "meta_batch_size")) << ", claim batch " << fmt(num(b, "claim_batch")) << ", max in flight "
            << fmt(num(b, "max_in_flight")) << "\n"
            << format_table(rows)
            << "claim-and-settle ceiling (no dispatcher, same run): " << fmt(num(b, "ceiling", "rows_per_second"))
            << " rows/s, PostgreSQL " << fmt(num(b, "ceiling", "postgres_cpu_us_per_row"), 1) << " us/row\n"
            << "drain / ceiling: " << fmt(num(b, "drain", "rows_per_second") / num(b, "ceiling", "rows_per_second"), 2)
            << " (target >= 0.7)\n"
            << std::flush;
}

}  // namespace outbox::bench

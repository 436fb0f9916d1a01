// outbox_bench: end-to-end benchmark of the outbox dispatcher (see docs/benchmarks.md).
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/support.hpp"

namespace outbox::bench {
namespace {

using json = nlohmann::json;

constexpr const char* usage = R"(usage: outbox_bench <command> [options]

commands:
  throughput     insert --rows rows with multi-row inserts; rows/s from the first insert to the last `sent`
  drain          insert --rows rows first, then start the dispatcher: its rate alone (spawn to last `sent`)
  latency        enqueue at --rate rows/s (one per transaction) for --seconds; commit-to-request p50/p95/p99
  trigger-cost   pgbench --clients calling enqueue_event_delivery for --trigger-seconds, trigger on and off
  all            all of the above, then a summary table
  wake-modes     pgbench at --wake-clients for --wake-seconds in each wake mode (none, always, adaptive)
                 with the dispatcher delivering; then latency in each mode (not part of `all`)
  batched        throughput and drain with Meta rows in batches of --meta-batch (not part of `all`;
                 defaults --rows 200000 --claim-batch 1000 --max-in-flight 2000); runs `ceiling` first
  fleet          drain --rows with 1, 2 and 4 dispatcher processes (--fleet) against one database
  ceiling        the engine's claim and settle statements alone, one libpq connection, batches of
                 --claim-batch (500): what the database can do with no dispatcher (not part of `all`)
  crm            the set-up a CRM runs: one signed webhook destination at CONCURRENCY 10, then 50
                 (--crm-concurrency), other settings at their defaults: drain of --rows (20000) rows
                 inserted by one statement, then latency at --rate for --seconds (10) from 4 producers,
                 delivered to a Node receiver in a process of its own (--sink); CPU per event
                 (PostgreSQL, dispatcher, receiver), WAL, RSS, and statements per event by role when
                 pg_stat_statements is loaded (not part of `all`)
  paused-backlog claims of 10 rows while a Meta destination is paused with --paused-rows due rows
                 (0,200000,2000000): the engine's claim and the single scan, ms and buffers (not part of `all`)
  migration-stall  a table of --rows (2000000) rows at migration 0006, a CRM inserting every 5 ms, then
                 each later migration: its seconds and the longest insert meanwhile (not part of `all`)
  chaos          three dispatchers deliver --rows (1200) rows while backends are terminated every 700 ms,
                 PostgreSQL restarts, one dispatcher is SIGKILLed and the endpoint fails 9 % of requests:
                 delivered, dead, lost, stuck, duplicates by cause, recovery time (not part of `all`)
  destinations   a drain of --rows (20000) rows to one registry destination, then spread over 1,000 (100
                 paused, 10 refusing connections): claim latency, rows/s, RSS, /metrics lines, status, and
                 the reload (a destination created, its row delivered) in each (not part of `all`)
  http-floor     --rows webhook requests over --concurrency (16) keep-alive TLS connections from a
                 bare Asio + OpenSSL client to the same sink (--sink receiver: crm's Node receiver):
                 the CPU floor under the dispatcher's per-request figure, no database (not part of `all`)

The database server comes from the libpq environment (PGHOST, PGPORT, PGUSER);
each scenario creates, migrates and drops its own scratch database.

options:
  --rows N              throughput rows (50000)
  --insert-batch N      rows per INSERT statement / transaction (1000)
  --rate R              latency: offered rows/s (200)
  --seconds S           latency: measured seconds (20)
  --warmup S            latency: seconds offered before measuring (2)
  --producers N         latency: producer connections sharing the schedule (8)
  --trigger-seconds S   trigger cost: pgbench duration per mode (30)
  --clients N           trigger cost: pgbench clients (16)
  --pgbench-threads N   trigger cost: pgbench -j (2)
  --trigger NAME        trigger cost: the NOTIFY trigger (event_delivery_notify_insert)
  --wake-clients LIST   wake modes: pgbench client counts (1,4,16,32)
  --wake-seconds S      wake modes: pgbench duration per mode and client count (20)
  --wake-poll-ms N      wake modes: OUTBOX_POLL_INTERVAL_MS of the dispatcher in every mode (100)
  --db-wake-mode MODE   set outbox_set_wake_mode(MODE) before the dispatcher starts: always, adaptive, off
  --provider P          throughput/drain rows: webhook (default) or meta (batched sets meta)
  --meta-batch N        OUTBOX_DEST__META__DEFAULT__BATCH_SIZE (1000)
  --pgbench PATH        pgbench executable ($PG_TEST_BIN/pgbench, else /usr/bin/pgbench)
  --dispatcher PATH     dispatcher executable (the one next to outbox_bench)
  --dispatcher-nice N   run the dispatchers at niceness N (-10: nine times the CPU weight; root)
  --claim-batch N       OUTBOX_CLAIM_BATCH for the dispatcher (its default when unset)
  --max-in-flight N     OUTBOX_MAX_IN_FLIGHT (its default when unset)
  --concurrency N       OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY (its default when unset)
  --wake listen|poll    OUTBOX_WAKE_MODE (its default when unset)
  --env NAME=VALUE      any other dispatcher variable (repeatable)
  --no-sign             no webhook secret (requests are not HMAC-signed)
  --sink-threads N      threads of the in-process HTTPS sink (1)
  --sink lean|receiver  where requests go: the in-process lean sink, or a Node HTTPS receiver in a
                        process of its own that checks each signature and parses each body (crm's
                        default; lean for every other scenario)
  --dispatchers N       throughput/drain: dispatcher processes against the one database (1)
  --fleet LIST          fleet: the --dispatchers of each drain (1,2,4)
  --preload-sent N      ceiling: N `sent` rows in the table before measuring (0)
  --paused-rows LIST    paused-backlog: the paused destination's due rows of each pass (0,200000,2000000)
  --crm-concurrency LIST  crm: the destination's CONCURRENCY of each pass (10,50)
  --log-dir DIR         where dispatcher and pgbench output goes (a new /tmp directory)
  --json FILE           also write every figure as JSON
)";

std::string self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// "1,4,16,32"
std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

options parse(int argc, char** argv) {
  options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    std::exit(args.empty() ? 2 : 0);
  }
  o.command = args[0];
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--rows") {
      o.rows = std::stoll(next());
      o.rows_given = true;
    } else if (a == "--insert-batch") o.insert_batch = std::stoi(next());
    else if (a == "--rate") o.rate = std::stod(next());
    else if (a == "--seconds") {
      o.seconds = std::stod(next());
      o.seconds_given = true;
    } else if (a == "--crm-concurrency") o.crm_concurrency = int_list(next());
    else if (a == "--paused-rows") o.paused_rows = int_list(next());
    else if (a == "--warmup") o.warmup = std::stod(next());
    else if (a == "--producers") o.producers = std::stoi(next());
    else if (a == "--trigger-seconds") o.trigger_seconds = std::stoi(next());
    else if (a == "--clients") o.clients = std::stoi(next());
    else if (a == "--pgbench-threads") o.pgbench_threads = std::stoi(next());
    else if (a == "--trigger") o.trigger_name = next();
    else if (a == "--wake-clients") o.wake_clients = int_list(next());
    else if (a == "--wake-seconds") o.wake_seconds = std::stoi(next());
    else if (a == "--wake-poll-ms") o.wake_poll_ms = std::stoi(next());
    else if (a == "--db-wake-mode") o.db_wake_mode = next();
    else if (a == "--provider") o.provider = next();
    else if (a == "--meta-batch") o.meta_batch = std::stoi(next());
    else if (a == "--pgbench") o.pgbench = next();
    else if (a == "--dispatcher") o.dispatcher = next();
    else if (a == "--dispatcher-nice") o.dispatcher_nice = std::stoi(next());
    else if (a == "--claim-batch") o.claim_batch = std::stoi(next());
    else if (a == "--max-in-flight") o.max_in_flight = std::stoi(next());
    else if (a == "--concurrency") o.concurrency = std::stoi(next());
    else if (a == "--wake") o.wake = next();
    else if (a == "--no-sign") o.sign = false;
    else if (a == "--sink-threads") o.sink_threads = std::stoi(next());
    else if (a == "--sink") o.sink = next();
    else if (a == "--dispatchers") o.dispatchers = std::stoi(next());
    else if (a == "--fleet") o.fleet_sizes = int_list(next());
    else if (a == "--preload-sent") o.preload_sent = std::stoll(next());
    else if (a == "--log-dir") o.log_dir = next();
    else if (a == "--json") o.json_out = next();
    else if (a == "--env") {
      const std::string kv = next();
      const auto eq = kv.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("--env needs NAME=VALUE");
      o.extra_env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  if (o.rows < 1 || o.insert_batch < 1 || o.rate <= 0 || o.seconds <= 0 || o.warmup < 0 || o.trigger_seconds < 1 ||
      o.clients < 1 || o.producers < 1 || o.pgbench_threads < 1 || o.sink_threads < 1 || o.wake_seconds < 1 ||
      o.wake_poll_ms < 1 || o.meta_batch < 1 || o.wake_clients.empty() || o.dispatchers < 1 || o.fleet_sizes.empty() ||
      o.preload_sent < 0)
    throw std::invalid_argument("numbers must be positive");
  if (o.sink.empty()) o.sink = o.command == "crm" ? "receiver" : "lean";
  if (o.sink != "lean" && o.sink != "receiver") throw std::invalid_argument("--sink: lean or receiver");
  if (o.sink == "receiver" && o.provider != "webhook")
    throw std::invalid_argument("--sink receiver speaks webhook only (--provider webhook)");
  for (int c : o.wake_clients)
    if (c < 1) throw std::invalid_argument("--wake-clients: client counts must be positive");
  if (o.dispatcher.empty()) o.dispatcher = self_dir() + "/dispatcher";
  if (access(o.dispatcher.c_str(), X_OK) != 0) {
#ifdef OUTBOX_DISPATCHER_EXE
    o.dispatcher = OUTBOX_DISPATCHER_EXE;
#endif
  }
  if (o.pgbench.empty()) {
    // scripts/with_postgres.sh exports the server's bin directory as PG_TEST_BIN.
    const char* bin = std::getenv("PG_TEST_BIN");
    if (!bin || !*bin) bin = std::getenv("OUTBOX_PG_BIN");
    o.pgbench = bin && *bin ? std::string(bin) + "/pgbench" : "/usr/bin/pgbench";
  }
  if (o.log_dir.empty()) {
    char templ[] = "/tmp/outbox-bench.XXXXXX";
    if (!mkdtemp(templ)) throw std::runtime_error("cannot create a log directory in /tmp");
    o.log_dir = templ;
  } else {
    std::filesystem::create_directories(o.log_dir);
  }
  return o;
}

void print_summary(const json& all, const options& o) {
  struct row {
    std::string figure, measured, target, verdict, peers;
  };
  std::vector<row> rows;
  const auto verdict = [](bool ok) { return std::string(ok ? "PASS" : "MISS"); };
  double peak_rss = 0;
  double duplicates = 0;
  bool have_dispatch = false;
  if (all.contains("throughput")) {
    const auto& t = all["throughput"];
    const double rps = num(t, "rows_per_second");
    rows.push_back({"end-to-end throughput, 1 event/request", fmt(rps) + " rows/s", ">= 8,000", verdict(rps >= 8000),
                    "graphile-worker 1.4k, pg-boss 2.6k, Node FOR UPDATE loop 5.4k"});
    rows.push_back({"  dispatcher CPU, throughput run",
                    fmt(num(t, "resources", "dispatcher_cpu_seconds"), 2) + " s (" +
                        fmt(num(t, "resources", "dispatcher_cpu_us_per_row"), 0) + " us/row)",
                    "", "", ""});
    const double n = num(t, "rows") / 1e6;
    rows.push_back({"  CPU per row: dispatcher / PostgreSQL / sink",
                    fmt(num(t, "resources", "dispatcher_cpu_seconds") / n) + " / " +
                        fmt(num(t, "resources", "postgres_cpu_seconds") / n) + " / " +
                        fmt(num(t, "resources", "bench_process_cpu_seconds") / n) + " us",
                    "", "", "sink column includes the inserting client"});
    rows.push_back({"  machine busy during the run",
                    fmt(num(t, "resources", "machine_busy_cores"), 2) + " of " +
                        fmt(num(t, "resources", "machine_cores")) + " cores",
                    "", "", ""});
    peak_rss = std::max(peak_rss, num(t, "dispatcher_peak_rss_mb"));
    duplicates += num(t, "duplicates");
    have_dispatch = true;
  }
  if (all.contains("drain")) {
    const auto& t = all["drain"];
    rows.push_back({"drain rate (rows inserted before start)", fmt(num(t, "rows_per_second")) + " rows/s", "", "",
                    "dispatcher alone, no concurrent inserts"});
    rows.push_back({"  dispatcher CPU, drain run",
                    fmt(num(t, "resources", "dispatcher_cpu_seconds"), 2) + " s (" +
                        fmt(num(t, "resources", "dispatcher_cpu_us_per_row"), 0) + " us/row)",
                    "", "", ""});
    peak_rss = std::max(peak_rss, num(t, "dispatcher_peak_rss_mb"));
    duplicates += num(t, "duplicates");
    have_dispatch = true;
  }
  if (all.contains("latency")) {
    const auto& l = all["latency"];
    const double p99 = num(l, "commit_to_request_ms", "p99");
    rows.push_back({"commit-to-request p50/p95/p99 @ " + fmt(o.rate) + "/s",
                    fmt(num(l, "commit_to_request_ms", "p50"), 2) + " / " +
                        fmt(num(l, "commit_to_request_ms", "p95"), 2) + " / " + fmt(p99, 2) + " ms",
                    "p99 < 5 ms", verdict(p99 < 5), "p99: graphile-worker ~12 ms, pg-boss ~20 ms"});
    rows.push_back({"  dispatcher CPU, latency run",
                    fmt(num(l, "resources", "dispatcher_cpu_seconds"), 2) + " s (" +
                        fmt(num(l, "resources", "dispatcher_cpu_us_per_row"), 0) + " us/row)",
                    "", "", ""});
    peak_rss = std::max(peak_rss, num(l, "dispatcher_peak_rss_mb"));
    duplicates += num(l, "duplicates");
    have_dispatch = true;
  }
  if (have_dispatch) {
    rows.push_back(
        {"dispatcher peak RSS", fmt(peak_rss, 1) + " MB", "< 20 MB", verdict(peak_rss < 20), "~100 MB each"});
    rows.push_back({"duplicate deliveries", fmt(duplicates), "0", verdict(duplicates == 0), ""});
  }
  if (all.contains("trigger_cost")) {
    const auto& c = all["trigger_cost"];
    rows.push_back({"CRM enqueue/s, " + fmt(o.clients) + " clients: trigger on / off",
                    fmt(num(c, "with_trigger", "inserts_per_second")) + " / " +
                        fmt(num(c, "without_trigger", "inserts_per_second")) + " (" + fmt(num(c, "ratio"), 2) + "x)",
                    "report", "", ""});
  }
  std::vector<std::vector<std::string>> table{{"figure", "measured", "target", "verdict", "peers (issue 3)"}};
  for (const auto& r : rows) table.push_back({r.figure, r.measured, r.target, r.verdict, r.peers});
  std::cout << "\n" << format_table(table) << std::flush;
}

int run(int argc, char** argv) {
  const options o = parse(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);
  json all;
  all["machine"] = {{"cores", std::thread::hardware_concurrency()}, {"load_average_at_start", load_average_1m()}};
  all["machine"]["cpu_reference_ms_at_start"] = cpu_reference_ms();
  const double steal_at_start = machine_steal_seconds();
  const auto started = steady::now();
  all["log_dir"] = o.log_dir;
  const bool every = o.command == "all";
  bool known = false;
  if (every || o.command == "throughput") {
    all["throughput"] = run_throughput(o, false);
    known = true;
  }
  if (every || o.command == "drain") {
    all["drain"] = run_throughput(o, true);
    known = true;
  }
  if (every || o.command == "latency") {
    all["latency"] = run_latency(o);
    known = true;
  }
  if (every || o.command == "trigger-cost") {
    all["trigger_cost"] = run_trigger_cost(o);
    known = true;
  }
  if (o.command == "wake-modes") {
    all["wake_modes"] = run_wake_modes(o);
    known = true;
  }
  if (o.command == "fleet") {
    all["fleet"] = run_fleet(o);
    known = true;
  }
  if (o.command == "ceiling") {
    all["ceiling"] = run_ceiling(o);
    known = true;
  }
  if (o.command == "http-floor") {
    all["http_floor"] = run_http_floor(o);
    known = true;
  }
  if (o.command == "batched") {
    all["batched"] = run_batched(o);
    known = true;
  }
  if (o.command == "crm") {
    all["crm"] = run_crm(o);
    known = true;
  }
  if (o.command == "chaos") {
    all["chaos"] = run_chaos(o);
    known = true;
  }
  if (o.command == "paused-backlog") {
    all["paused_backlog"] = run_paused_backlog(o);
    known = true;
  }
  if (o.command == "destinations") {
    all["destinations"] = run_many_destinations(o);
    known = true;
  }
  if (o.command == "migration-stall") {
    all["migration_stall"] = run_migration_stall(o);
    known = true;
  }
  if (!known) throw std::invalid_argument("unknown command " + o.command);
  all["machine"]["load_average_at_end"] = load_average_1m();
  all["machine"]["cpu_reference_ms_at_end"] = cpu_reference_ms();
  const double run_seconds = seconds_between(started, steady::now());
  const double steal_at_end = machine_steal_seconds();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (steal_at_start >= 0 && steal_at_end >= 0) {  // -1: no /proc/stat
    const double stolen = steal_at_end - steal_at_start;
    const double share = stolen / (run_seconds * cores);
    all["machine"]["cpu_steal_seconds"] = stolen;
    all["machine"]["cpu_steal_share"] = share;
    note("CPU stolen by the hypervisor during the run: " + fmt(stolen, 2) + " s (" + fmt(100 * share, 1) +
         " % of the cores' time)");
  }
  note("speed reference (SHA-256 of 16 MB on one core): " +
       fmt(all["machine"]["cpu_reference_ms_at_start"].get<double>(), 1) + " ms at start, " +
       fmt(all["machine"]["cpu_reference_ms_at_end"].get<double>(), 1) + " ms at end");
  if (o.json_out.empty()) {
    std::cerr << all.dump(2) << "\n";
  } else {
    std::ofstream(o.json_out) << all.dump(2) << "\n";
  }
  if (all.contains("wake_modes")) print_wake_modes_summary(all["wake_modes"]);
  else if (all.contains("batched")) print_batched_summary(all["batched"]);
  else if (all.contains("crm")) print_crm_summary(all["crm"]);
  else if (all.contains("chaos")) print_chaos_summary(all["chaos"]);
  else if (all.contains("paused_backlog")) print_paused_backlog_summary(all["paused_backlog"]);
  else if (all.contains("destinations")) print_many_destinations_summary(all["destinations"]);
  else if (all.contains("migration_stall")) print_migration_stall_summary(all["migration_stall"]);
  else if (all.contains("fleet")) print_fleet_summary(all["fleet"]);
  else if (all.contains("ceiling")) std::cout << all["ceiling"].dump(2) << "\n";
  else if (all.contains("http_floor")) std::cout << all["http_floor"].dump(2) << "\n";
  else print_summary(all, o);
  std::cout << "(details: " << (o.json_out.empty() ? "stderr" : o.json_out) << "; logs: " << o.log_dir << ")\n";
  return 0;
}

}  // namespace
}  // namespace outbox::bench

int main(int argc, char** argv) {
  try {
    return outbox::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "outbox_bench: error: " << e.what() << "\n";
    return 1;
  }
}

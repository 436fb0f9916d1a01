#pragma once
// The CRM's insert load as pgbench runs it: clients calling
// enqueue_event_delivery (one new webhook row per transaction, autocommit,
// `pgbench -n -M prepared`). While pgbench runs, the backends' wait events are
// sampled every 20 ms from pg_stat_activity to show where the time goes
// (Lock:object is the instance-wide lock NOTIFY takes at commit). Used by
// trigger-cost and wake-modes.
#include <string>

#include <nlohmann/json.hpp>

#include "bench/support.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::bench {

// Writes the pgbench script into o.log_dir; returns its path.
[[nodiscard]] std::string write_enqueue_script(const options& o);

// Runs `pgbench -c clients -j min(o.pgbench_threads, clients) -T seconds -f script` on `db`.
// Returns inserts_per_second, latency_average_ms, failed_transactions,
// wait_events (top 6, shares of the samples), postgres_cpu_seconds,
// machine_busy_cores and pgbench_output (the log, <log dir>/pgbench-<label>.log).
// `conn` is any connection to the database (it locates the PostgreSQL cluster).
// Throws when pgbench fails.
nlohmann::json run_enqueue_pgbench(const options& o, const test::scratch_database& db, pg& conn,
                                   const std::string& script, int clients, int seconds, const std::string& label);

}  // namespace outbox::bench

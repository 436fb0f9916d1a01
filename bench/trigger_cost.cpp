// What the NOTIFY trigger costs the CRM: pgbench clients calling
// enqueue_event_delivery (one new row per transaction, autocommit), once with
// the trigger enabled and once disabled (poll-only), no dispatcher running
// (see pgbench_load.hpp for the load and the wait-event sampling).
#include <stdexcept>

#include "bench/pgbench_load.hpp"
#include "bench/support.hpp"
#include "db/connection.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::bench {

using json = nlohmann::json;

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
  const std::string script_path = write_enqueue_script(o);

  json out;
  out["clients"] = o.clients;
  out["pgbench_threads"] = o.pgbench_threads;
  out["seconds"] = o.trigger_seconds;
  out["script"] = script_path;
  out["load_average_before"] = load_average_1m();
  for (const std::string mode : {"with_trigger", "without_trigger"}) {
    conn.exec("ALTER TABLE event_delivery " + std::string(mode == "with_trigger" ? "ENABLE" : "DISABLE") + " TRIGGER " +
              trigger);
    conn.exec("TRUNCATE event_delivery, event_delivery_attempt");
    conn.exec("CHECKPOINT");
    json r = run_enqueue_pgbench(o, db, conn, script_path, o.clients, o.trigger_seconds, mode);
    r["rows"] = conn.scalar("SELECT count(*) FROM event_delivery");
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

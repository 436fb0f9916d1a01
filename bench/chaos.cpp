// chaos: what happens to events under faults, as figures (issue 31). The
// scenario of tests/e2e/chaos_e2e.cpp at a fixed mix, on the image's binary:
// three dispatchers (CONCURRENCY 10) deliver --rows rows (1200) inserted one
// per transaction at about 60 a second, while every 700 ms each dispatcher's
// database backends are terminated, PostgreSQL restarts once (half-way), one
// dispatcher is SIGKILLed (a third of the way) and replaced, and the endpoint
// answers 5 % 500, 2 % 429, 1 % hangs past the request timeout and 1 % resets
// after reading the request. Prints delivered, dead, lost (a row `sent` that
// the endpoint never accepted, or an insert that never landed), stuck (not
// final when the run ends), duplicates by cause, and the recovery time: from
// the last fault to the last row settled.
#include <signal.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "bench/support.hpp"
#include "tests/support/crm_writers.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::bench {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using test::recorded_request;
using test::response_plan;

constexpr const char* chaos_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";  // a test value, as the e2e tests'

// The endpoint: a fixed, deterministic mix of faults; what it accepted, by key.
struct faulty_endpoint {
  std::mutex mutex;
  std::map<std::string, int> accepted;
  std::map<std::string, int> faults;
  std::uint64_t seq = 0;

  response_plan answer(const recorded_request& r) {
    std::lock_guard lock(mutex);
    const auto pick = (++seq * 2654435761u) % 100;  // spread over the run, the same every run
    if (pick < 5) return fault("500", response_plan::reply(500, R"({"error":"flaky"})"));
    if (pick < 7) return fault("429", response_plan::reply(429, "{}", {{"retry-after", "1"}}));
    if (pick < 8) return fault("hang", response_plan::hang());
    if (pick < 9) return fault("reset", response_plan::close_without_response());
    ++accepted[r.header("webhook-id").value_or("")];
    return response_plan::reply(200).after(5ms);
  }
  response_plan fault(const char* kind, response_plan plan) {
    ++faults[kind];
    return plan;
  }
};

// Retries through faults (a restart refuses connections for a moment).
std::int64_t count_rows(const std::string& conninfo, const std::string& where) {
  for (int tries = 0;; ++tries) {
    try {
      pg conn(conninfo);
      return conn.scalar("SELECT count(*) FROM event_delivery WHERE " + where);
    } catch (const std::exception&) {
      if (tries > 200) throw;
      std::this_thread::sleep_for(50ms);
    }
  }
}

void terminate_dispatcher_backends(const std::string& conninfo) {
  try {
    pg conn(conninfo);
    (void)conn.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND application_name LIKE 'outbox-dispatcher%'");
  } catch (const std::exception&) {
    // The server may be restarting.
  }
}

std::set<std::string> in_flight_keys(const std::string& conninfo, const std::string& instance) {
  for (;;) {
    try {
      pg conn(conninfo);
      const auto r =
          conn.exec("SELECT idempotency_key FROM event_delivery WHERE state = 'sending' AND lease_owner LIKE $1",
                    {instance + ":%"});
      std::set<std::string> keys;
      for (int i = 0; i < PQntuples(r.get()); ++i) keys.insert(value(r, i, 0));
      return keys;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(50ms);
    }
  }
}

class chaos_run {
 public:
  explicit chaos_run(const options& o) : o_(o), server_(test::test_server_options{ca_.issue()}) {
    server_.set_fallback([this](const recorded_request& r) { return endpoint_.answer(r); });
  }

  std::unique_ptr<child_process> start(const std::string& name) {
    const std::vector<std::pair<std::string, std::string>> env{
        {"DATABASE_URL", db_.conninfo()},
        {"OUTBOX_LOG_LEVEL", "warn"},
        {"OUTBOX_METRICS_ADDRESS", ""},
        {"OUTBOX_EXTRA_CA_FILE", ca_.cert_pem_file().string()},
        {"OUTBOX_INSTANCE_NAME", name},
        // The timers of the e2e tests (tests/support/engine_harness.cpp): the
        // shortest lease the lease rule allows with these timeouts, so a
        // SIGKILLed process's rows come back after 17 s.
        {"OUTBOX_POLL_INTERVAL_MS", "500"},
        {"OUTBOX_LEASE_SECONDS", "17"},
        {"OUTBOX_REQUEST_TIMEOUT_MS", "2000"},
        {"OUTBOX_CONNECT_TIMEOUT_MS", "1000"},
        {"OUTBOX_SWEEP_INTERVAL_SECONDS", "1"},
        {"OUTBOX_BACKOFF_BASE_SECONDS", "1"},
        {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", server_.url("/hook", "localhost")},
        {"OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET", chaos_secret},
        {"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", "10"}};
    return std::make_unique<child_process>(o_.dispatcher, std::vector<std::string>{"run"}, child_environment(env),
                                           o_.log_dir + "/dispatcher-" + name + ".log");
  }

  json run();

 private:
  json tally(std::int64_t rows, const std::set<std::string>& killed_in_flight);

  const options& o_;
  test::scratch_database db_;
  test::test_ca ca_{"outbox bench CA"};
  test::test_https_server server_;
  faulty_endpoint endpoint_;
};

json chaos_run::run() {
  const std::int64_t rows = o_.rows_given ? o_.rows : 1200;
  const char* pg_ctl = std::getenv("PG_TEST_CTL");
  std::vector<std::unique_ptr<child_process>> dispatchers;
  for (int i = 0; i < 3; ++i) dispatchers.push_back(start("chaos-" + std::to_string(i)));
  // The CRM: one row per transaction; an insert lost to a fault is tried again.
  std::atomic<long long> inserted{0};
  std::thread writer([&] { test::insert_one_by_one(db_.conninfo(), rows, inserted, 15ms); });
  std::set<std::string> killed_in_flight;
  int terminations = 0;
  bool restarted = false, killed = false;
  while (inserted < rows) {
    std::this_thread::sleep_for(700ms);
    terminate_dispatcher_backends(db_.conninfo());
    ++terminations;
    if (!killed && inserted > rows / 3) {
      // The worst moment: while it holds rows in flight (a request or a settle away).
      const auto give_up = steady::now() + 5s;
      while (in_flight_keys(db_.conninfo(), "chaos-0").empty() && steady::now() < give_up)
        std::this_thread::sleep_for(2ms);
      ::kill(dispatchers[0]->pid(), SIGKILL);
      (void)dispatchers[0]->wait(5s);
      killed_in_flight = in_flight_keys(db_.conninfo(), "chaos-0");
      killed = true;
      dispatchers.push_back(start("chaos-0b"));
    }
    if (!restarted && pg_ctl && *pg_ctl && inserted > rows / 2) {
      restarted = std::system((std::string(pg_ctl) + " restart -m fast >/dev/null 2>&1").c_str()) == 0;
    }
  }
  writer.join();
  terminate_dispatcher_backends(db_.conninfo());
  ++terminations;
  const auto last_fault = steady::now();
  const auto deadline = last_fault + 120s;
  while (count_rows(db_.conninfo(), "state IN ('sent', 'dead')") < rows && steady::now() < deadline)
    std::this_thread::sleep_for(50ms);
  json out = tally(rows, killed_in_flight);
  out["recovery_seconds"] = seconds_between(last_fault, steady::now());
  out["faults"] = {{"backend_terminations", terminations},
                   {"postgres_restarts", restarted ? 1 : 0},
                   {"sigkills", killed ? 1 : 0},
                   {"rows_in_flight_in_the_killed_process", killed_in_flight.size()}};
  {
    std::lock_guard lock(endpoint_.mutex);
    for (const auto& [kind, n] : endpoint_.faults) out["faults"]["endpoint_" + kind] = n;
  }
  for (auto& d : dispatchers)
    if (d->running()) (void)d->terminate(20s);
  return out;
}

json chaos_run::tally(std::int64_t rows, const std::set<std::string>& killed_in_flight) {
  pg conn(db_.conninfo());
  json out;
  out["rows"] = rows;
  out["inserted"] = conn.scalar("SELECT count(*) FROM event_delivery");
  out["delivered"] = conn.scalar("SELECT count(*) FROM event_delivery WHERE state = 'sent'");
  out["dead"] = conn.scalar("SELECT count(*) FROM event_delivery WHERE state = 'dead'");
  out["stuck"] = conn.scalar("SELECT count(*) FROM event_delivery WHERE state NOT IN ('sent', 'dead')");
  const auto keys = conn.exec("SELECT idempotency_key FROM event_delivery WHERE state = 'sent'");
  std::lock_guard lock(endpoint_.mutex);
  std::int64_t lost = rows - out["inserted"].get<std::int64_t>();
  for (int i = 0; i < PQntuples(keys.get()); ++i) lost += endpoint_.accepted.contains(value(keys, i, 0)) ? 0 : 1;
  std::int64_t after_sigkill = 0, other = 0;
  for (const auto& [key, times] : endpoint_.accepted) {
    if (times < 2) continue;
    (killed_in_flight.contains(key) ? after_sigkill : other) += times - 1;
  }
  out["lost"] = lost;
  out["duplicates_after_sigkill"] = after_sigkill;
  out["duplicates_other"] = other;
  return out;
}

}  // namespace

json run_chaos(const options& o) {
  note("chaos: three dispatchers, backends terminated every 700 ms, a PostgreSQL restart, a SIGKILL, endpoint faults");
  if (!std::getenv("PG_TEST_CTL"))
    note("chaos: PG_TEST_CTL is not set (run under scripts/with_postgres.sh): no restart");
  chaos_run run(o);
  return run.run();
}

void print_chaos_summary(const json& r) {
  std::vector<std::vector<std::string>> table{
      {"rows", "delivered", "dead", "lost", "stuck", "duplicates (SIGKILL)", "duplicates (other)", "recovery s"}};
  table.push_back({fmt(num(r, "rows")), fmt(num(r, "delivered")), fmt(num(r, "dead")), fmt(num(r, "lost")),
                   fmt(num(r, "stuck")), fmt(num(r, "duplicates_after_sigkill")), fmt(num(r, "duplicates_other")),
                   fmt(num(r, "recovery_seconds"), 1)});
  std::vector<std::vector<std::string>> faults{{"fault", "count"}};
  for (const auto& [name, n] : r["faults"].items()) faults.push_back({name, fmt(n.get<double>())});
  std::cout << "\n" << format_table(table) << "\n" << format_table(faults) << std::flush;
}

}  // namespace outbox::bench

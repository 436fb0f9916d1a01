// Several real dispatcher processes against one database: no row is sent twice
// while three of them compete, and a dispatcher killed with SIGKILL mid-request
// loses nothing: another one resends its rows, with the same key and body, once
// their lease has expired (and not before).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "db/connection.hpp"
#include "tests/support/crm_writers.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace multi_dispatcher_e2e {

using namespace std::chrono_literals;
using outbox::environment;
using outbox::test::dispatcher_process;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::insert_concurrently;
using outbox::test::recorded_request;
using outbox::test::response_plan;
using steady = std::chrono::steady_clock;

namespace {

// Requests grouped by their webhook-id header ("" when missing).
std::map<std::string, std::vector<recorded_request>> by_key(const std::vector<recorded_request>& requests) {
  std::map<std::string, std::vector<recorded_request>> out;
  for (const auto& r : requests) out[r.header("webhook-id").value_or("")].push_back(r);
  return out;
}

// idempotency_key -> lead_project_id for every row.
std::map<std::string, long long> keys_of(const e2e_fixture& fx) {
  const auto r = fx.db.query("SELECT idempotency_key, lead_project_id FROM event_delivery");
  std::map<std::string, long long> out;
  for (int i = 0; i < r.rows(); ++i) out.emplace(std::string(r.text(i, 0)), r.int64(i, 1));
  return out;
}

// A number of seconds computed by the database, e.g. "extract(epoch FROM clock_timestamp())".
double db_seconds(const e2e_fixture& fx, const std::string& select) {
  return std::stod(std::string(fx.db.query("SELECT (" + select + ")::float8").text(0, 0)));
}

}  // namespace

TEST_CASE("three dispatchers while the CRM inserts 3,000 rows: every key delivered exactly once") {
  e2e_fixture fx;
  std::vector<dispatcher_process*> dispatchers;
  for (int i = 1; i <= 3; ++i) {
    // Small claims so the three really interleave.
    // 2 s to connect: three dispatchers' TLS handshakes on 2 busy cores (sanitizer builds) can pass 1 s.
    environment extra{{"OUTBOX_CLAIM_BATCH", "20"},
                      {"OUTBOX_INSTANCE_NAME", "e2e-" + std::to_string(i)},
                      {"OUTBOX_CONNECT_TIMEOUT_MS", "2000"}};
    dispatchers.push_back(&fx.start_dispatcher(extra, "dispatcher-" + std::to_string(i)));
  }
  for (auto* d : dispatchers) REQUIRE(d->wait_for_log("listening for new rows", 15s));

  constexpr int writers = 4;
  constexpr int per_writer = 750;
  constexpr std::size_t total = writers * per_writer;
  const auto started = steady::now();
  const auto problems = insert_concurrently(fx.db.conninfo(), writers, per_writer, 10, 1);
  REQUIRE_MESSAGE(problems.empty(), "insert problems: " << problems.size() << " first: " << problems.front());
  const auto inserted = steady::now();
  REQUIRE(fx.count("true") == static_cast<long long>(total));

  REQUIRE(fx.server.wait_for_requests(total, 60s));
  REQUIRE(eventually([&] { return fx.count("state <> 'sent'") == 0; }, 30s));
  const auto finished = steady::now();

  // Stop all three; nothing may arrive after everything was sent.
  for (auto* d : dispatchers) d->signal(SIGTERM);
  for (auto* d : dispatchers) CHECK(d->wait_exit(15s) == 0);

  const auto requests = fx.server.requests();
  const auto groups = by_key(requests);
  std::size_t duplicates = 0;
  for (const auto& [key, reqs] : groups) duplicates += reqs.size() - 1;
  MESSAGE("3 dispatchers, " << total << " rows from " << writers << " writers: inserted in "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(inserted - started).count()
                            << " ms, all sent after "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(finished - started).count()
                            << " ms; requests " << requests.size() << ", duplicates " << duplicates);
  CHECK(duplicates == 0);
  CHECK(requests.size() == total);
  CHECK(groups.size() == total);

  // Every row's key arrived, with that row's payload.
  const auto keys = keys_of(fx);
  REQUIRE(keys.size() == total);
  std::size_t missing = 0;
  std::size_t wrong_body = 0;
  for (const auto& [key, lead] : keys) {
    const auto it = groups.find(key);
    if (it == groups.end()) {
      ++missing;
      continue;
    }
    const auto body = nlohmann::json::parse(it->second.front().body, nullptr, false);
    if (body.is_discarded() || body.value("lead", -1LL) != lead) ++wrong_body;
  }
  CHECK(missing == 0);
  CHECK(wrong_body == 0);

  CHECK(fx.count("state = 'sending'") == 0);
  CHECK(fx.count("state = 'sent' AND attempts = 1 AND sent_at IS NOT NULL") == static_cast<long long>(total));
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'delivered'") ==
        static_cast<long long>(total));
  // Nothing failed, timed out or lost a lease (rows put back unsent, e.g. 'deferred', count no attempt).
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome IN "
                     "('retry', 'dead', 'rejected', 'lease_expired', 'abandoned', 'held')") == 0);
  // All three took part (claims of 20 rows, woken by the same notifications).
  const auto per_owner = fx.db.query(
      "SELECT split_part(lease_owner, ':', 1), count(*) FROM event_delivery_attempt WHERE outcome = 'delivered' "
      "GROUP BY 1 ORDER BY 1");
  std::string shares;
  for (int i = 0; i < per_owner.rows(); ++i)
    shares += std::string(per_owner.text(i, 0)) + "=" + std::string(per_owner.text(i, 1)) + " ";
  MESSAGE("rows delivered per dispatcher: " << shares);
  CHECK(per_owner.rows() == 3);
}

TEST_CASE("SIGKILL with requests in flight: a second dispatcher resends after the lease expires, same key and body") {
  e2e_fixture fx;
  // Slow answers until the kill, so the requests are held by the server when it happens.
  auto killed = std::make_shared<std::atomic<bool>>(false);
  fx.server.set_fallback([killed](const recorded_request&) {
    return killed->load() ? response_plan::reply(200) : response_plan::reply(200).after(2000ms);
  });
  // The shortest legal lease for a 2.5 s request timeout and the fixture's 1 s
  // connect timeout: 2 x (1 + 1 + 2.5) s + 5 s (dispatcher/engine/lease_budget.hpp).
  constexpr int lease_seconds = 14;
  constexpr std::size_t rows = 24;
  constexpr std::size_t concurrency = 16;  // 16 requests in flight, 8 rows claimed and waiting for a slot
  const environment extra{{"OUTBOX_LEASE_SECONDS", std::to_string(lease_seconds)},
                          {"OUTBOX_REQUEST_TIMEOUT_MS", "2500"},
                          {"OUTBOX_DEST__WEBHOOK__DEFAULT__CONCURRENCY", std::to_string(concurrency)}};
  auto& first = fx.start_dispatcher(extra, "dispatcher-killed");
  REQUIRE(first.wait_for_log("listening for new rows", 15s));
  fx.db.query(
      "SELECT enqueue_event_delivery(g, 'webhook', 'Lead', jsonb_build_object('lead', g, 'value', g * 1.5, "
      "'note', 'caf\u00e9 \"quoted\"')) FROM generate_series(1, $1::int) AS g",
      {std::to_string(rows)});
  REQUIRE(fx.server.wait_for_requests(concurrency, 10s));
  REQUIRE(eventually([&] { return fx.count("state = 'sending'") == static_cast<long long>(rows); }, 5s));

  const double kill_epoch = db_seconds(fx, "extract(epoch FROM clock_timestamp())");
  const auto kill_time = steady::now();
  first.kill();
  killed->store(true);
  REQUIRE(first.wait_exit(5s) == 128 + SIGKILL);
  const std::size_t before_kill = fx.server.request_count();
  CHECK(before_kill == concurrency);
  const double lease_left =
      db_seconds(fx, "SELECT extract(epoch FROM min(lease_expires_at) - clock_timestamp()) FROM event_delivery");
  CHECK(lease_left > 0);
  CHECK(fx.count("state = 'sending'") == static_cast<long long>(rows));  // nobody gave them back

  auto& second = fx.start_dispatcher(extra, "dispatcher-rescuer");
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == static_cast<long long>(rows); },
                     std::chrono::seconds(lease_seconds + 15)));
  const double recovery = db_seconds(fx, "SELECT extract(epoch FROM max(sent_at)) FROM event_delivery") - kill_epoch;
  MESSAGE("recovery after SIGKILL with " << rows << " rows in flight (lease " << lease_seconds << " s): " << recovery
                                         << " s from kill to last row sent");
  CHECK(recovery < lease_seconds + 3.0);  // within one lease plus wake-up and delivery

  second.signal(SIGTERM);
  CHECK(second.wait_exit(10s) == 0);

  const auto requests = fx.server.requests();
  CHECK(requests.size() == before_kill + rows);
  // Nothing was resent while the dead dispatcher's lease was still valid.
  for (std::size_t i = before_kill; i < requests.size(); ++i) {
    CHECK(requests[i].arrived_at - kill_time >= std::chrono::duration<double>(lease_left - 0.3));
  }

  // Group by the row (the lead in the body) and compare what was sent each time.
  const auto keys = keys_of(fx);
  std::map<long long, std::vector<recorded_request>> by_lead;
  for (const auto& r : requests) {
    const auto body = nlohmann::json::parse(r.body, nullptr, false);
    REQUIRE_FALSE(body.is_discarded());
    by_lead[body.value("lead", -1LL)].push_back(r);
  }
  REQUIRE(by_lead.size() == rows);
  std::size_t repeated = 0;
  for (const auto& [lead, reqs] : by_lead) {
    INFO("lead " << lead);
    const auto key = std::find_if(keys.begin(), keys.end(), [&](const auto& kv) { return kv.second == lead; });
    REQUIRE(key != keys.end());
    if (reqs.size() > 1) ++repeated;
    for (const auto& r : reqs) {
      CHECK(r.header("webhook-id") == key->first);
      CHECK(r.header("idempotency-key") == key->first);
      CHECK(r.body == reqs.front().body);  // byte-identical
    }
  }
  CHECK(repeated == before_kill);
  // Claimed twice each: once by the dead dispatcher, once by the rescuer.
  CHECK(fx.count("state = 'sent' AND attempts = 2") == static_cast<long long>(rows));
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE outcome = 'delivered' AND lease_owner LIKE "
                     "'%' || $1 || '%'",
                     {":" + std::to_string(second.pid()) + ":"}) == static_cast<long long>(rows));
  CHECK(fx.count("state = 'sending'") == 0);
}

}  // namespace multi_dispatcher_e2e

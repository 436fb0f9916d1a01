// LISTEN: the insert trigger's notification arrives; a killed session reconnects.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "db/connection.hpp"
#include "db/listener.hpp"
#include "tests/support/async_signal.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace listener_pgtest {

using namespace std::chrono_literals;
using outbox::db::listener_event;
namespace asio = boost::asio;

namespace {

struct recorder {
  std::vector<listener_event> events;
  int count(listener_event::kind k) const {
    int n = 0;
    for (const auto& e : events) n += e.type == k;
    return n;
  }
};

// A listener running on `ex` that records its events; stop() it and await
// stopped() before the frame that holds it ends (its coroutine refers to it).
struct running_listener {
  recorder rec;
  outbox::test::async_signal signal;
  outbox::db::listener l;
  bool finished = false;
  running_listener(asio::any_io_executor ex, outbox::db::listener_options options)
      : signal(ex), l(ex, std::move(options), [this](const listener_event& e) {
          rec.events.push_back(e);
          signal.notify();
        }) {
    asio::co_spawn(ex, l.async_run(), [this](std::exception_ptr) {
      finished = true;
      signal.notify();
    });
  }
  asio::awaitable<bool> stopped() {
    l.stop();
    co_return co_await signal.wait_until([&] { return finished; }, 10s);
  }
};

}  // namespace

TEST_CASE("an insert's notification reaches the listener; a no-op insert sends none") {
  outbox::test::scratch_database db;
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    running_listener run(ex, {.conninfo = db.conninfo()});
    auto& rec = run.rec;
    auto& signal = run.signal;
    REQUIRE(co_await signal.wait_until([&] { return rec.count(listener_event::kind::listening) == 1; }, 10s));
    CHECK_FALSE(rec.events.front().reconnected);

    auto writer = co_await outbox::db::connection::async_connect(ex, db.conninfo(), 5s);
    // Named like the engine's other connections, for pg_stat_activity.
    const auto named = co_await writer.async_query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'outbox-dispatcher listener'",
        {}, 5s);
    CHECK(named.int64(0, 0) == 1);
    const auto enqueue = "SELECT enqueue_event_delivery(1, 'meta', 'Lead', '{}'::jsonb)";
    (void)co_await writer.async_query(enqueue, {}, 5s);
    CHECK(co_await signal.wait_until([&] { return rec.count(listener_event::kind::notification) == 1; }, 10s));

    // The same event again inserts nothing, so the trigger must stay quiet. A
    // second, real insert afterwards proves the channel still works and bounds the wait.
    (void)co_await writer.async_query(enqueue, {}, 5s);
    (void)co_await writer.async_query("SELECT enqueue_event_delivery(2, 'meta', 'Lead', '{}'::jsonb)", {}, 5s);
    CHECK(co_await signal.wait_until([&] { return rec.count(listener_event::kind::notification) >= 2; }, 10s));
    CHECK(rec.count(listener_event::kind::notification) == 2);
    CHECK(co_await run.stopped());
  });
}

TEST_CASE("registry changes reach the listener as the entries they name, or as one read when many") {
  outbox::test::scratch_database db;
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    running_listener run(ex, {.conninfo = db.conninfo()});
    auto& rec = run.rec;
    auto& signal = run.signal;
    REQUIRE(co_await signal.wait_until([&] { return rec.count(listener_event::kind::listening) == 1; }, 10s));
    auto writer = co_await outbox::db::connection::async_connect(ex, db.conninfo(), 5s);
    (void)co_await writer.async_query(
        "INSERT INTO outbox_destination (provider, name, settings) VALUES "
        "('webhook', 'brand_a', '{}'), ('webhook', 'brand_b', '{}')",
        {}, 5s);
    REQUIRE(co_await signal.wait_until([&] { return rec.count(listener_event::kind::notification) >= 1; }, 10s));
    // Both names, whether they came in one wake-up or two.
    std::string details;
    const auto both = [&] {
      details.clear();
      for (const auto& e : rec.events) details += e.detail + ",";
      return details.find("outbox:destinations:webhook/brand_a") != std::string::npos &&
             details.find("outbox:destinations:webhook/brand_b") != std::string::npos;
    };
    CHECK(co_await signal.wait_until(both, 10s));
    rec.events.clear();
    (void)co_await writer.async_query(
        "INSERT INTO outbox_destination (provider, name, settings) "
        "SELECT 'webhook', 'bulk_' || g, '{}' FROM generate_series(1, 1000) g",
        {}, 5s);
    // 1,000 in one commit arrive together (in a few reads at most): more than 64
    // at once become one read of the whole registry; no event names more than 64.
    const auto whole_read_asked = [&] {
      for (const auto& e : rec.events) {
        if (("," + e.detail + ",").find(",outbox:destinations,") != std::string::npos) return true;
      }
      return false;
    };
    CHECK(co_await signal.wait_until(whole_read_asked, 10s));
    for (const auto& e : rec.events) {
      std::size_t named = 0;
      for (auto at = e.detail.find("outbox:destinations:"); at != std::string::npos;
           at = e.detail.find("outbox:destinations:", at + 1))
        ++named;
      CHECK(named <= outbox::db::max_changed_destinations);
    }
    CHECK(co_await run.stopped());
  });
}

TEST_CASE("a listener whose backend is terminated reconnects, re-LISTENs and says so") {
  outbox::test::scratch_database db;
  outbox::test::run_async([&](auto ex) -> asio::awaitable<void> {
    running_listener run(ex, {.conninfo = db.conninfo(), .heartbeat_interval = 1s});
    auto& rec = run.rec;
    auto& signal = run.signal;
    auto& l = run.l;
    REQUIRE(co_await signal.wait_until([&] { return l.is_listening(); }, 10s));

    auto admin = co_await outbox::db::connection::async_connect(ex, db.conninfo(), 5s);
    outbox::db::params pid{std::to_string(l.backend_pid())};
    (void)co_await admin.async_query("SELECT pg_terminate_backend($1::int)", std::move(pid), 5s);

    REQUIRE(co_await signal.wait_until([&] { return rec.count(listener_event::kind::listening) == 2; }, 15s));
    CHECK(rec.count(listener_event::kind::lost) >= 1);
    CHECK(rec.events.back().reconnected);
    CHECK(l.reconnects() == 1);

    // The new session really listens: a fresh insert is announced.
    (void)co_await admin.async_query("SELECT enqueue_event_delivery(5, 'meta', 'Lead', '{}'::jsonb)", {}, 5s);
    CHECK(co_await signal.wait_until([&] { return rec.count(listener_event::kind::notification) >= 1; }, 10s));
    CHECK(co_await run.stopped());
  });
}

}  // namespace listener_pgtest

#include "dispatcher/engine/clock_timer.hpp"

#include <doctest/doctest.h>

#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "tests/support/manual_clock.hpp"

namespace clock_timer_test {

using namespace outbox;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// Waits on `t` for `after`, then notes the virtual time and whether the deadline came.
asio::awaitable<void> wait_once(clock_timer& t, engine_clock& c, std::chrono::steady_clock::duration after,
                                std::vector<std::pair<engine_clock::steady_time, bool>>& seen) {
  t.expires_after(after);
  const bool expired = co_await t.async_wait();
  seen.emplace_back(c.steady_now(), expired);
}

}  // namespace

TEST_CASE("a manual clock fires a timer when time reaches its deadline, not before") {
  asio::io_context io;
  test::manual_clock c(io);
  clock_timer t(io.get_executor(), c);
  std::vector<std::pair<engine_clock::steady_time, bool>> seen;
  const auto start = c.steady_now();
  asio::co_spawn(io, wait_once(t, c, 10s, seen), asio::detached);
  c.settle();
  CHECK(c.armed() == 1);
  c.advance(9s);
  CHECK(seen.empty());
  c.advance(5s);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].first == start + 10s);  // woken at its deadline, not where the advance ended
  CHECK(seen[0].second);
  CHECK(c.steady_now() == start + 14s);
  CHECK(c.system_now() - test::manual_clock(io).system_now() == 14s);  // one timeline
}

TEST_CASE("cancel ends a wait early and says so; re-arming cancels the pending wait") {
  asio::io_context io;
  test::manual_clock c(io);
  clock_timer t(io.get_executor(), c);
  std::vector<std::pair<engine_clock::steady_time, bool>> seen;
  asio::co_spawn(io, wait_once(t, c, 1h, seen), asio::detached);
  c.settle();
  t.cancel();
  c.settle();
  REQUIRE(seen.size() == 1);
  CHECK_FALSE(seen[0].second);
  CHECK(c.armed() == 0);
  CHECK_FALSE(c.advance_to_next());  // nothing left to fire
}

TEST_CASE("timers fire in deadline order and a woken coroutine arms its next timer before time moves on") {
  asio::io_context io;
  test::manual_clock c(io);
  clock_timer a(io.get_executor(), c), b(io.get_executor(), c);
  std::vector<int> order;
  int ticks = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {  // every 2 s
          a.expires_after(2s);
          if (co_await a.async_wait()) ++ticks;
          order.push_back(1);
        }
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        b.expires_after(5s);
        (void)co_await b.async_wait();
        order.push_back(2);
      },
      asio::detached);
  c.advance(7s);
  CHECK(ticks == 3);
  CHECK(order == std::vector<int>{1, 1, 2, 1});  // 2 s, 4 s, 5 s, 6 s
}

TEST_CASE("a deadline already passed answers at once through the executor") {
  asio::io_context io;
  test::manual_clock c(io);
  clock_timer t(io.get_executor(), c);
  std::vector<std::pair<engine_clock::steady_time, bool>> seen;
  asio::co_spawn(io, wait_once(t, c, -1s, seen), asio::detached);
  c.settle();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].second);
}

TEST_CASE("on the machine's clock the timer is Asio's own") {
  asio::io_context io;
  clock_timer t(io.get_executor(), real_clock());
  bool expired = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        t.expires_after(1ms);
        expired = co_await t.async_wait();
      },
      asio::detached);
  io.run();
  CHECK(expired);
  CHECK(t.deadline() <= real_clock().steady_now());
}

}  // namespace clock_timer_test

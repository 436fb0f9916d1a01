// The HTTPS client's limit on TLS handshakes at once (providers/http/handshake_gate.hpp).
#include <chrono>
#include <optional>
#include <vector>

#include <doctest/doctest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "providers/http/handshake_gate.hpp"
#include "tests/providers/http/https_test_helpers.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace handshake_gate_test {

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using outbox::providers::detail::handshake_gate;
using clock = std::chrono::steady_clock;
using outbox::test::https::run_until;

// Enters, notes whether it got a slot, holds it until `hold` is cleared.
asio::awaitable<void> visitor(handshake_gate& gate, clock::time_point deadline, std::vector<int>& order, int id,
                              std::optional<handshake_gate::slot>& held) {
  handshake_gate::slot slot = co_await gate.async_enter(co_await asio::this_coro::executor, deadline);
  order.push_back(slot.held() ? id : -id);
  if (slot.held()) held.emplace(std::move(slot));
}

}  // namespace

TEST_CASE("handshake_gate: a released slot goes to the oldest waiter; one past its deadline gets none") {
  asio::io_context io;
  handshake_gate gate{1};
  std::vector<int> order;
  std::optional<handshake_gate::slot> first, second, third, fourth, fifth;
  const auto far = clock::now() + 60s;

  asio::co_spawn(io, visitor(gate, far, order, 1, first), asio::detached);
  asio::co_spawn(io, visitor(gate, clock::now() + 20ms, order, 2, second), asio::detached);
  asio::co_spawn(io, visitor(gate, far, order, 3, third), asio::detached);
  run_until(io, [&] { return order.size() == 2; });
  REQUIRE(order == std::vector<int>{1, -2});  // 2 gave up at its deadline; 3 still waits

  first.reset();  // the slot goes to 3, not back to the free count
  run_until(io, [&] { return order.size() == 3; });
  REQUIRE(order == std::vector<int>{1, -2, 3});
  asio::co_spawn(io, visitor(gate, clock::now() + 20ms, order, 4, fourth), asio::detached);
  run_until(io, [&] { return order.size() == 4; });
  CHECK(order == std::vector<int>{1, -2, 3, -4});

  third.reset();  // nobody waits: the slot is free again
  asio::co_spawn(io, visitor(gate, clock::now() + 20ms, order, 5, fifth), asio::detached);
  run_until(io, [&] { return order.size() == 5; });
  CHECK(order == std::vector<int>{1, -2, 3, -4, 5});
}

}  // namespace handshake_gate_test

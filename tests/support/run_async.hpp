#pragma once
// Runs a coroutine to completion on a fresh io_context, from plain test code.
#include <chrono>
#include <future>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace outbox::test {

// `make(executor)` returns an awaitable; its value (or exception) is returned.
template <class MakeAwaitable>
auto run_async(MakeAwaitable make, std::chrono::seconds limit = std::chrono::seconds(60)) {
  boost::asio::io_context io;
  auto fut = boost::asio::co_spawn(io, make(io.get_executor()), boost::asio::use_future);
  io.run_for(limit);
  if (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    throw std::runtime_error("test coroutine did not finish in time");
  return fut.get();
}

}  // namespace outbox::test

#pragma once
// The completion token of the engine's coroutines where an error is a value to
// look at (a timer cancelled, a peer gone), not an exception.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace outbox

#include "providers/http/handshake_gate.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox::providers::detail {

boost::asio::awaitable<handshake_gate::slot> handshake_gate::async_enter(
    boost::asio::any_io_executor ex, std::chrono::steady_clock::time_point deadline) {
  if (free_ > 0) {
    --free_;
    co_return slot(this);
  }
  auto me = std::make_shared<waiter>(ex);
  me->timer.expires_at(deadline);
  waiting_.push_back(me);
  auto [ec] = co_await me->timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  (void)ec;  // cancelled by release(), or the deadline passed
  if (me->handed) co_return slot(this);
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), me), waiting_.end());
  co_return slot();
}

void handshake_gate::release() {
  while (!waiting_.empty()) {
    std::shared_ptr<waiter> next = std::move(waiting_.front());
    waiting_.pop_front();
    // Its deadline may have passed already, the wake-up still queued: it gives up then.
    if (next->timer.cancel() == 0) continue;
    next->handed = true;
    return;
  }
  ++free_;
}

}  // namespace outbox::providers::detail

#include "dispatcher/engine/clock_timer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox {

namespace asio = boost::asio;

clock_timer::clock_timer(asio::any_io_executor ex, outbox::engine_clock& c) : clock_(c), timer_(std::move(ex)) {}

clock_timer::~clock_timer() {
  if (scheduled_) clock_.unschedule(*this);
}

void clock_timer::expires_at(engine_clock::steady_time deadline) {
  if (scheduled_) clock_.unschedule(*this);
  deadline_ = deadline;
  fired_ = false;
  scheduled_ = clock_.schedule(*this);
  // On a manual clock the Asio timer only carries the wake-up: it never expires by itself.
  timer_.expires_at(scheduled_ ? asio::steady_timer::time_point::max() : deadline);
}

void clock_timer::cancel() {
  if (scheduled_) clock_.unschedule(*this);
  scheduled_ = false;
  timer_.cancel();
}

void clock_timer::fire() {
  scheduled_ = false;
  fired_ = true;
  timer_.cancel();
}

asio::awaitable<bool> clock_timer::async_wait() {
  if (fired_ || (scheduled_ && deadline_ <= clock_.steady_now())) {
    // Already due: answer through the executor as Asio's timer does, so a loop
    // over due timers still lets other work run.
    co_await asio::post(timer_.get_executor(), asio::use_awaitable);
    co_return true;
  }
  auto [ec] = co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec || fired_;
}

}  // namespace outbox

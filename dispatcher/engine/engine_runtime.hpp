#pragma once
// The infrastructure every engine part uses: the loop, the clock, the log and
// the metrics. Everything else a part works with (the destinations, the rows in
// flight, the other parts, the store) it is handed by name in its constructor,
// so its header says what it depends on. One io_context thread, so no locking.
// The engine owns what these refer to; the parts must not outlive it.
#include <boost/asio/any_io_executor.hpp>

#include "dispatcher/engine/clock.hpp"
#include "dispatcher/ops/log.hpp"
#include "dispatcher/ops/metrics.hpp"

namespace outbox {

struct engine_runtime {
  boost::asio::any_io_executor ex;
  engine_clock& clock;  // every part reads time here (a manual clock in tests)
  logger& log;
  outbox::metrics& metrics;
};

}  // namespace outbox

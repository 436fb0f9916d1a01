#pragma once
// The state the engine's parts share: the loop, the clock, the log, the
// metrics, the destinations and the rows in flight, plus the signals they send
// each other. Not the configuration (each part gets its own options:
// dispatcher/engine/part_options.hpp) nor the store (each part opens its own
// session). One io_context thread, so no locking. The engine owns it; the
// parts hold a reference and must not outlive it.
#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/clock.hpp"
#include "dispatcher/engine/destinations.hpp"
#include "dispatcher/engine/in_flight.hpp"
#include "dispatcher/ops/log.hpp"
#include "dispatcher/ops/metrics.hpp"

namespace outbox {

struct engine_context {
  engine_context(boost::asio::any_io_executor executor, const config& configuration, logger& logger_ref,
                 std::string instance, outbox::engine_clock& time)
      : ex(executor),
        clock(time),
        log(logger_ref),
        instance_id(std::move(instance)),
        destinations(executor, configuration, time.system_now(), time.steady_now()) {}

  boost::asio::any_io_executor ex;
  outbox::engine_clock& clock;  // every part reads time here (a manual clock in tests)
  logger& log;
  const std::string instance_id;
  outbox::metrics metrics;
  destination_registry destinations;
  in_flight_table in_flight;
  bool stopping = false;

  // Make the claimer look for rows now (a notification, capacity freed, a resume).
  std::function<void()> wake_claimer = [] {};
  // Rows left the in-flight table: wakes the claimer only if it waits for room,
  // so a trickle does not cost an empty claim per settled event.
  std::function<void()> capacity_freed = [] {};
};

}  // namespace outbox

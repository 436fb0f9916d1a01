// The destination gate: open, paused (on-call, configured, automatic), probing.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "dispatcher/engine/destination_gate.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace destination_gate_test {

using namespace std::chrono_literals;
using outbox::destination_gate;

namespace {
const destination_gate::time_point t0{std::chrono::seconds(1'000'000)};
}

TEST_CASE("gate: an automatic pause ends in one probe, whose answer reopens or pauses again") {
  destination_gate g;
  CHECK(g.open(t0));
  g.pause(t0, 60s, "HTTP 401");
  CHECK_FALSE(g.open(t0 + 59s));
  CHECK_FALSE(g.probe_due(t0 + 59s));
  CHECK(g.reopens_at() == t0 + 60s);
  CHECK(g.probe_due(t0 + 60s));
  g.probe_started();
  CHECK(g.probing());
  CHECK_FALSE(g.open(t0 + 61s));       // the claim still skips it
  CHECK_FALSE(g.probe_due(t0 + 61s));  // one probe at a time
  g.probe_finished(false, t0 + 62s);
  CHECK_FALSE(g.open(t0 + 62s));
  CHECK(g.probe_due(t0 + 62s + destination_gate::circuit_open_for));
  g.probe_started();
  g.probe_finished(true, t0 + 100s);
  CHECK(g.open(t0 + 100s));
  CHECK(g.reason().empty());
}

TEST_CASE("gate: a probe row that made no request lets another row probe at once; nothing waiting reopens") {
  destination_gate g;
  g.pause(t0, 30s, "circuit");
  g.probe_started();
  g.probe_abandoned(t0 + 31s);
  CHECK(g.probe_due(t0 + 31s));
  g.probe_not_needed();
  CHECK(g.open(t0 + 31s));
}

TEST_CASE("gate: the circuit opens after the threshold of consecutive failures; a success resets the count") {
  destination_gate g;
  const auto row = [](std::int64_t id) { return std::vector<std::int64_t>{id}; };
  for (int i = 1; i < destination_gate::circuit_threshold; ++i) CHECK_FALSE(g.note_result(true, row(i), t0));
  CHECK_FALSE(g.note_result(false, row(99), t0));  // reset
  for (int i = 1; i < destination_gate::circuit_threshold; ++i) CHECK_FALSE(g.note_result(true, row(i), t0));
  CHECK(g.open(t0));
  CHECK(g.note_result(true, row(5), t0));
  CHECK_FALSE(g.open(t0));
  CHECK(g.reason() == "circuit open after 5 consecutive failures (of at least 3 different rows)");
}

TEST_CASE("gate: one poison row failing again and again never opens the circuit; failures of several rows do") {
  destination_gate g;
  const std::vector<std::int64_t> poison{7};
  for (int i = 0; i < 50; ++i) CHECK_FALSE(g.note_result(true, poison, t0));  // its retries, on a quiet destination
  CHECK(g.open(t0));
  // Two rows are not enough either; a third row failing too is a receiver that is down.
  CHECK_FALSE(g.note_result(true, std::vector<std::int64_t>{8}, t0));
  CHECK(g.open(t0));
  CHECK(g.note_result(true, std::vector<std::int64_t>{9}, t0));
  CHECK_FALSE(g.open(t0));
  // A batch carries several rows at once: one failing request of three rows counts them all.
  destination_gate batched;
  for (int i = 1; i < destination_gate::circuit_threshold; ++i) {
    CHECK_FALSE(batched.note_result(true, std::vector<std::int64_t>{1, 2, 3}, t0));
  }
  CHECK(batched.note_result(true, std::vector<std::int64_t>{1, 2, 3}, t0));
}

TEST_CASE("gate: on-call pauses are not shortened by automatic ones; resume lifts both; configuration stays") {
  destination_gate g;
  g.manual_pause("paused by alice: maintenance", t0);
  g.pause(t0, 10s, "HTTP 401");
  CHECK(g.reason() == "paused by alice: maintenance");
  CHECK_FALSE(g.probe_due(t0 + 1h));
  CHECK(g.resume());
  CHECK(g.open(t0));
  g.pause(t0, 60s, "HTTP 403");
  CHECK(g.resume());  // "retry now"
  CHECK(g.open(t0));
  CHECK_FALSE(g.resume());

  destination_gate configured;
  configured.configure_paused(t0);
  CHECK_FALSE(configured.open(t0));
  (void)configured.resume();
  CHECK_FALSE(configured.open(t0));
  CHECK_FALSE(configured.probe_due(t0 + 1h));
}

TEST_CASE("gate: paused since the first pause of a run of pauses and probes; cleared once it delivers again") {
  destination_gate g;
  CHECK_FALSE(g.paused_since().has_value());
  g.pause(t0, 60s, "HTTP 401");
  CHECK(g.paused_since() == t0);
  g.probe_started();
  g.probe_finished(false, t0 + 62s);  // paused again: still the same outage
  g.pause(t0 + 62s, 60s, "HTTP 401");
  CHECK(g.paused_since() == t0);
  g.probe_started();
  g.probe_finished(true, t0 + 200s);
  CHECK_FALSE(g.paused_since().has_value());
  g.manual_pause("paused by alice: maintenance", t0 + 300s);
  CHECK(g.paused_since() == t0 + 300s);
  CHECK(g.resume());
  CHECK_FALSE(g.paused_since().has_value());
}

}  // namespace destination_gate_test

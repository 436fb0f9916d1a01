#pragma once
// Where the claim's one ordered scan starts while destinations are skipped
// (paused, circuit open, unusable). Their due rows gather at the head of the
// schedule, and a scan from the beginning steps over all of them at every
// claim (1,000 destinations, 110 skipped: about 4,400 rows, 2 of a 3 ms claim).
// So a claim starts at the first row the last one picked: every row before it
// was skipped, locked by another claim or in flight then. Rows can come back
// before that place: a skipped destination resumes (the mark is dropped at
// once), a lease expires, another dispatcher's claim rolls back, a transaction
// commits a row long after it began (the statement steps back a second for
// those). For all of them, a claim from the beginning at least once a second.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "db/delivery_store.hpp"

namespace outbox {

class claim_scan_mark {
 public:
  using steady = std::chrono::steady_clock;
  static constexpr std::chrono::seconds from_start_every{1};

  // Where the next claim, skipping `skipped` (its one ordered scan), starts; nullopt: the beginning.
  [[nodiscard]] std::optional<db::claim_position> start(std::vector<std::string> skipped, steady::time_point now);
  // What that claim picked first (nullopt: nothing), under the same `skipped`.
  void claimed(std::optional<db::claim_position> first_picked, steady::time_point now);
  // The claim failed, or went another way (by destination): the next scan starts at the beginning.
  void forget() { at_.reset(); }

 private:
  std::optional<db::claim_position> at_;
  std::vector<std::string> skipped_;      // sorted: the destinations skipped when at_ was set
  std::vector<std::string> now_skipped_;  // sorted: those of the claim under way
  bool from_start_ = false;               // the claim under way starts at the beginning
  std::optional<steady::time_point> last_from_start_;
};

}  // namespace outbox

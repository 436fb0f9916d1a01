#include "dispatcher/engine/claim_scan_mark.hpp"

namespace outbox {

std::optional<db::claim_position> claim_scan_mark::start(std::vector<std::string> skipped, steady::time_point now) {
  std::sort(skipped.begin(), skipped.end());
  now_skipped_ = std::move(skipped);
  // Nothing skipped: nothing to step over. A destination skipped then and not
  // now: its rows before the mark are due again.
  const bool still_skipped = std::includes(now_skipped_.begin(), now_skipped_.end(), skipped_.begin(), skipped_.end());
  const bool recent = last_from_start_ && now - *last_from_start_ < from_start_every;
  from_start_ = now_skipped_.empty() || !at_ || !still_skipped || !recent;
  if (from_start_) at_.reset();
  return at_;
}

void claim_scan_mark::claimed(std::optional<db::claim_position> first_picked, steady::time_point now) {
  if (from_start_) last_from_start_ = now;
  if (now_skipped_.empty() || !first_picked) return;  // nothing picked: the rows before the mark stay as they were
  at_ = first_picked;
  skipped_ = now_skipped_;
}

}  // namespace outbox

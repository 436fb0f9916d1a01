// What the sender records about one event besides its outcome: the fields its
// provider dropped, the match keys it carried, the request id to reconcile.
#include "dispatcher/engine/sender.hpp"

namespace outbox {

std::vector<std::string> sender::dropped_texts(const providers::dropped_fields& dropped) {
  std::vector<std::string> out;
  out.reserve(dropped.size());
  for (const auto& d : dropped) out.push_back(d.text());
  return out;
}

void sender::note_dropped(const destination& dest, std::int64_t row_id, const providers::dropped_fields& dropped) {
  if (dropped.empty()) return;
  std::string fields;
  for (const auto& d : dropped) {
    ++rt_.metrics.fields_dropped[{dest.provider_kind, dest.name, d.field, d.reason}];
    fields += (fields.empty() ? "" : "; ") + d.text();
  }
  rt_.log.warn("fields dropped from a conversion; it is sent without them",
               {{"row_id", row_id}, {"provider", dest.provider_kind}, {"destination", dest.name}, {"fields", fields}});
}

// What the provider said it could not use, in a 200: the row is sent; the fields go
// to the attempts log (beside those dropped before sending), a warning and a metric.
void sender::note_warnings(const destination& dest, std::int64_t row_id, const providers::dropped_fields& warnings,
                           db::settlement& s) {
  if (warnings.empty()) return;
  std::string fields;
  for (const auto& w : warnings) {
    ++rt_.metrics.field_warnings[{dest.provider_kind, dest.name, w.field, w.reason}];
    s.dropped_fields.push_back("provider warning: " + w.text());
    fields += (fields.empty() ? "" : "; ") + w.text();
  }
  rt_.log.warn("the provider accepted a conversion without some fields",
               {{"row_id", row_id}, {"provider", dest.provider_kind}, {"destination", dest.name}, {"fields", fields}});
}

void sender::attach_event_facts(const destination& dest, std::int64_t row_id, const providers::batch_outcome& verdict,
                                const providers::event_outcome& outcome, db::settlement& s) {
  const auto* row = in_flight_.find(row_id);
  if (row == nullptr) return;
  s.dropped_fields = row->dropped;
  if (s.state != db::settle_state::sent) return;
  note_warnings(dest, row_id, outcome.warnings, s);
  s.match_keys = row->match_keys;
  for (const auto& key : row->match_keys) ++rt_.metrics.match_keys[{dest.provider_kind, dest.name, key}];
  if (!verdict.request_id.empty()) {
    s.provider_request_id = verdict.request_id;
    s.status_check_after = dest.provider->status_check_delay();
  }
}

}  // namespace outbox

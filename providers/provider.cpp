#include "providers/provider.hpp"

namespace outbox::providers {

std::string_view to_string(request_state s) {
  switch (s) {
    case request_state::processing: return "PROCESSING";
    case request_state::success: return "SUCCESS";
    case request_state::partial_success: return "PARTIAL_SUCCESS";
    case request_state::failure: return "FAILURE";
    case request_state::unknown: break;
  }
  return "UNKNOWN";
}

std::optional<canonical_event> canonical_event_of(const outbound_event& event, preparation& out) {
  auto parsed = parse_canonical_event(event.payload);
  if (const auto* error = std::get_if<field_error>(&parsed)) {
    out.error = error->message();
    return std::nullopt;
  }
  auto& c = std::get<canonical_event>(parsed);
  out.dropped = std::move(c.dropped);
  c.dropped.clear();
  return std::move(c);
}

void resend_in_halves(batch_outcome& out, std::span<const std::size_t> which, const std::string& error) {
  const std::size_t first_half = (which.size() + 1) / 2;
  for (std::size_t k = 0; k < which.size(); ++k) {
    event_outcome& o = out.events.at(which[k]);
    o = event_outcome{};
    o.kind = outcome_kind::retry;
    o.error = error;
    o.resend_group = k < first_half ? 1 : 2;
  }
}

}  // namespace outbox::providers

// The in-memory twin of db/personal_data_store.cpp's retention erasure.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "providers/personal_data.hpp"
#include "tests/support/memory_statements.hpp"

namespace outbox::test {

std::int64_t memory_statements::erase_expired_personal_data(const db::retention_request& req) {
  std::vector<memory_row*> due;
  for (auto& [id, r] : s_.rows_) {
    if (r.open() || r.personal_data_erased_at) continue;
    const bool sent = r.state == "sent";
    const auto since = sent ? r.sent_at.value_or(r.updated_at) : r.updated_at;
    if (since < now_ - (sent ? req.sent_after : req.dead_after)) due.push_back(&r);
  }
  if (due.size() > static_cast<std::size_t>(req.batch)) due.resize(static_cast<std::size_t>(req.batch));
  for (memory_row* r : due) {
    const auto doc = nlohmann::json::parse(r->payload, nullptr, false);
    if (!doc.is_discarded()) r->payload = providers::with_personal_data_replaced(doc, "[erased]").dump();
    r->provider_response.clear();
    r->personal_data_erased_at = now_;
    r->personal_data_erased_why = "retention";
  }
  return static_cast<std::int64_t>(due.size());
}

}  // namespace outbox::test

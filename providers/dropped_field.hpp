#pragma once
// A field of the row's payload a provider left out of its request, and why.
// The conversion is still sent: only what a provider requires can kill a row.
// Dropped fields reach the attempts log, `dispatcher inspect` and
// outbox_fields_dropped_total{provider,destination,field,reason}.
#include <string>
#include <vector>

namespace outbox::providers {

struct dropped_field {
  std::string field;   // payload key: "date_of_birth", "currency", "extra.meta"
  std::string reason;  // short metric label: "wrong_type", "invalid_date", "invalid_phone"...
  std::string detail;  // one line for logs; never the value of a user field (it is personal data)

  // "date_of_birth: invalid_date (impossible date)", as the attempts log keeps it.
  [[nodiscard]] std::string text() const { return field + ": " + reason + (detail.empty() ? "" : " (" + detail + ")"); }
  friend bool operator==(const dropped_field&, const dropped_field&) = default;
};

using dropped_fields = std::vector<dropped_field>;

}  // namespace outbox::providers

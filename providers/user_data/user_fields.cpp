#include "providers/user_data/user_fields.hpp"

#include <algorithm>

namespace outbox::providers {

user_field_reader::user_field_reader(const canonical_event& event, std::string_view default_calling_code,
                                     dropped_fields& dropped, std::chrono::system_clock::time_point now)
    : dropped_(dropped) {
  options_.today = std::chrono::floor<std::chrono::days>(now);
  options_.default_calling_code = std::string{default_calling_code};
  for (const auto& raw : event.country) {
    if (auto country = normalize_field(pii_field::country, raw, options_); country.ok()) {
      options_.region = std::move(*country.value);
      break;
    }
  }
}

template <class Step>
std::vector<std::string> user_field_reader::each(std::string_view name, const std::vector<std::string>& raws,
                                                 Step step) {
  std::vector<std::string> out;
  for (const auto& raw : raws) {
    normalize_result r = step(raw);
    if (!r.ok()) {
      dropped_.push_back({std::string{name}, r.reason, r.detail});
      continue;
    }
    if (std::find(out.begin(), out.end(), *r.value) == out.end()) out.push_back(std::move(*r.value));
  }
  return out;
}

std::vector<std::string> user_field_reader::hashed(std::string_view name, pii_field field,
                                                   const std::vector<std::string>& raws) {
  return each(name, raws, [&](const std::string& raw) { return hash_field(field, raw, options_); });
}

std::vector<std::string> user_field_reader::normalized(std::string_view name, pii_field field,
                                                       const std::vector<std::string>& raws) {
  return each(name, raws, [&](const std::string& raw) { return normalize_field(field, raw, options_); });
}

}  // namespace outbox::providers

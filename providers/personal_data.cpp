#include "providers/personal_data.hpp"

namespace outbox::providers {

nlohmann::json with_personal_data_replaced(const nlohmann::json& doc, std::string_view marker) {
  if (doc.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : doc.items()) {
      out[key] = is_personal_field(key) ? nlohmann::json(marker) : with_personal_data_replaced(value, marker);
    }
    return out;
  }
  if (doc.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& value : doc) out.push_back(with_personal_data_replaced(value, marker));
    return out;
  }
  return doc;
}

}  // namespace outbox::providers

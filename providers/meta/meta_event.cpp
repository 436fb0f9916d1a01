// One entry of Meta's "data" array, written by one field list into either of
// two writers: straight to text (the hot path: no document, no dump) or into
// an nlohmann::json document, when extra.meta must be merged into it.
#include <algorithm>
#include <charconv>
#include <cstdint>

#include "providers/json_text_writer.hpp"
#include "providers/meta/meta_provider.hpp"
#include "providers/setting_checks.hpp"
#include "providers/user_data/match_keys.hpp"
#include "providers/user_data/user_fields.hpp"

namespace outbox::providers {
namespace {

using nlohmann::json;

// Meta's lead_id is a 64-bit integer; anything else goes as the string it is.
std::optional<std::int64_t> lead_id_number(const std::string& id) {
  std::int64_t n = 0;
  if (!setting_checks::all_digits(id) || id.size() > 18) return std::nullopt;
  std::from_chars(id.data(), id.data() + id.size(), n);
  return n;
}

// The json_text_writer interface over a document.
class json_document_writer {
 public:
  explicit json_document_writer(json& root) : levels_{&root} {}
  template <class T>
  void field(std::string_view key, const T& value) {
    (*levels_.back())[std::string{key}] = value;
  }
  void open(std::string_view key) {
    json& child = (*levels_.back())[std::string{key}] = json::object();
    keys_.emplace_back(key);
    levels_.push_back(&child);
  }
  void close(bool keep_when_empty = true) {
    const bool empty = levels_.back()->empty();
    levels_.pop_back();
    if (empty && !keep_when_empty) levels_.back()->erase(keys_.back());
    keys_.pop_back();
  }

 private:
  std::vector<json*> levels_;
  std::vector<std::string> keys_;
};

// The user_data keys an entry carries: what its match keys are judged on.
template <class Has>
std::vector<std::string> match_keys_from(Has has) {
  std::vector<std::string> keys;
  const auto add = [&](std::string_view key, bool present) {
    if (present) keys.emplace_back(key);
  };
  add(match_key::email, has("em"));
  add(match_key::phone, has("ph"));
  add(match_key::external_id, has("external_id"));
  add(match_key::browser_id, has("fbc") || has("fbp"));
  add(match_key::ip_user_agent, has("client_ip_address") && has("client_user_agent"));
  add(match_key::address, (has("fn") || has("ln")) && (has("zp") || has("ct") || has("country")));
  add(match_key::lead_id, has("lead_id"));
  add(match_key::date_of_birth, has("db"));
  return keys;
}

// Writes the entry's fields (see meta_event_json in the header) and returns the
// user_data keys it wrote.
template <class Writer>
std::vector<std::string_view> write_meta_event(Writer& w, const outbound_event& event, const canonical_event& c,
                                               const meta_destination& destination, dropped_fields& dropped,
                                               std::chrono::system_clock::time_point now) {
  w.field("event_name", std::string_view{event.event_name});
  w.field("event_time", c.event_time);
  w.field("event_id", std::string_view{event.idempotency_key});
  w.field("action_source", std::string_view{c.action_source});
  if (c.event_source_url) w.field("event_source_url", std::string_view{*c.event_source_url});

  // Meta takes a list for every customer-information field.
  std::vector<std::string_view> user_keys;
  const auto put = [&](std::string_view key, const auto& value) {
    w.field(key, value);
    user_keys.push_back(key);
  };
  user_field_reader fields{c, destination.default_phone_country_code, dropped, now};
  fields.keep_hash_appendix();
  w.open("user_data");
  const auto hashed = [&](std::string_view key, std::string_view name, pii_field field,
                          const std::vector<std::string>& raws) {
    if (auto values = fields.hashed(name, field, raws); !values.empty()) put(key, values);
  };
  hashed("em", "email", pii_field::email, c.email);
  hashed("ph", "phone", pii_field::phone_digits, c.phone);
  hashed("fn", "first_name", pii_field::name, c.first_name);
  hashed("ln", "last_name", pii_field::name, c.last_name);
  hashed("ge", "gender", pii_field::gender, c.gender);
  hashed("db", "date_of_birth", pii_field::date_of_birth, c.date_of_birth);
  hashed("ct", "city", pii_field::city, c.city);
  hashed("st", "state", pii_field::state, c.state);
  hashed("zp", "zip", pii_field::zip, c.zip);
  hashed("country", "country", pii_field::country, c.country);
  hashed("external_id", "external_id", pii_field::external_id, c.external_id);
  if (c.client_ip) put("client_ip_address", std::string_view{*c.client_ip});
  if (c.user_agent) put("client_user_agent", std::string_view{*c.user_agent});
  if (c.fbc) put("fbc", std::string_view{*c.fbc});
  if (c.fbp) put("fbp", std::string_view{*c.fbp});
  if (c.lead_id) {
    if (const auto number = lead_id_number(*c.lead_id)) put("lead_id", *number);
    else put("lead_id", std::string_view{*c.lead_id});
  }
  w.close();

  w.open("custom_data");
  if (c.value) w.field("value", *c.value);
  if (c.currency) w.field("currency", std::string_view{*c.currency});
  if (c.order_id) w.field("order_id", std::string_view{*c.order_id});
  if (c.action_source == "system_generated") {
    w.field("event_source", std::string_view{"crm"});
    w.field("lead_event_source", std::string_view{destination.lead_event_source});
  }
  w.close(false);
  return user_keys;
}

}  // namespace

json meta_event_json(const outbound_event& event, const canonical_event& c, const meta_destination& destination,
                     dropped_fields& dropped, std::chrono::system_clock::time_point now) {
  json e = json::object();
  json_document_writer writer{e};
  write_meta_event(writer, event, c, destination, dropped, now);
  merge_extra(e, c.extra_for("meta"));
  e["event_id"] = event.idempotency_key;  // the dedup key is ours, whatever extra says
  return e;
}

json meta_event_json(const outbound_event& event, const canonical_event& canonical, const meta_destination& destination,
                     std::chrono::system_clock::time_point now) {
  dropped_fields ignored;
  return meta_event_json(event, canonical, destination, ignored, now);
}

std::vector<std::string> meta_match_keys(const json& event) {
  const auto user = event.find("user_data");
  if (user == event.end() || !user->is_object()) return {};
  return match_keys_from([&](const char* key) { return user->contains(key); });
}

meta_event_entry meta_event_entry_for(const outbound_event& event, const canonical_event& c,
                                      const meta_destination& destination, dropped_fields& dropped,
                                      std::chrono::system_clock::time_point now) {
  meta_event_entry entry;
  if (c.extra_for("meta") != nullptr) {  // a merge patch needs the document
    const json e = meta_event_json(event, c, destination, dropped, now);
    entry.match_keys = meta_match_keys(e);
    entry.text = e.dump(-1, ' ', false, json::error_handler_t::replace);
    return entry;
  }
  entry.text.reserve(512);
  json_text_writer writer{entry.text};
  const auto user_keys = write_meta_event(writer, event, c, destination, dropped, now);
  writer.finish();
  entry.text.shrink_to_fit();  // kept until the batch is sent: a thousand at a time
  entry.match_keys = match_keys_from(
      [&](std::string_view key) { return std::find(user_keys.begin(), user_keys.end(), key) != user_keys.end(); });
  return entry;
}

}  // namespace outbox::providers

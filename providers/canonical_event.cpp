#include "providers/canonical_event.hpp"
#include "providers/quoted_text.hpp"
#include "providers/text.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

namespace outbox::providers {
namespace {

using nlohmann::json;

// Unix seconds at or past this are taken for milliseconds (year 5138 in seconds).
constexpr std::int64_t millisecond_threshold = 100'000'000'000;
// Latest accepted time: 9999-12-31T23:59:59Z.
constexpr std::int64_t max_event_time = 253'402'300'799;

// A value quoted in an error: at most 60 bytes on a character boundary, control characters replaced.
// Appended rather than `"'" + ...`: GCC 12 at -O3 prints a false -Wstringop-overflow on that.
std::string quote_value(std::string_view value) {
  return std::string(1, '\'').append(quoted_excerpt(value)).append(1, '\'');
}

std::string type_of(const json& v) {
  if (v.is_number()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "a string";
}

std::optional<int> digits(std::string_view s) {
  int v = 0;
  for (const char c : s) {
    if (!is_ascii_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::int64_t days_from_civil(int y, unsigned m, unsigned d) {
  return std::chrono::sys_days{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}}
      .time_since_epoch()
      .count();
}

bool valid_date(int y, int m, int d) {
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  return std::chrono::year_month_day{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(m)},
                                     std::chrono::day{static_cast<unsigned>(d)}}
      .ok();
}

// Reads payload fields one by one: a missing event_time is the only failure;
// any other unusable field is dropped and noted.
class reader {
 public:
  explicit reader(const json& payload, dropped_fields& dropped) : payload_(payload), dropped_(dropped) {}

  [[nodiscard]] const std::optional<field_error>& error() const { return error_; }
  [[nodiscard]] bool failed() const { return error_.has_value(); }

  void fail(std::string field, std::string problem) {
    if (!error_) error_ = field_error{std::move(field), std::move(problem)};
  }
  void drop(std::string field, std::string reason, std::string detail) {
    dropped_.push_back({std::move(field), std::move(reason), std::move(detail)});
  }

  // nullptr when absent or null.
  [[nodiscard]] const json* find(const char* key) const {
    const auto it = payload_.find(key);
    if (it == payload_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // One value; integers too when `integers_ok` (ids and phone numbers). A list
  // gives its first usable value, the rest are dropped.
  std::optional<std::string> text(const char* key, bool integers_ok = false) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_array()) return scalar(key, *v, integers_ok);
    std::vector<std::string> values = list_of(key, *v, integers_ok);
    if (values.empty()) return std::nullopt;
    if (values.size() > 1)
      drop(key, "single_value", "takes one value; " + std::to_string(values.size() - 1) + " more dropped");
    return std::move(values.front());
  }

  // One value or a list of them, trimmed, exact repeats removed, at most canonical_max_values.
  std::vector<std::string> list(const char* key, bool integers_ok = false) {
    const json* v = find(key);
    if (v == nullptr) return {};
    if (!v->is_array()) {
      auto one = scalar(key, *v, integers_ok);
      return one ? std::vector<std::string>{std::move(*one)} : std::vector<std::string>{};
    }
    return list_of(key, *v, integers_ok);
  }

 private:
  std::optional<std::string> scalar(const char* key, const json& v, bool integers_ok) {
    if (v.is_string()) {
      const std::string_view s = trim_ascii_space(v.get_ref<const std::string&>());
      if (s.empty()) return std::nullopt;
      return std::string{s};
    }
    if (integers_ok && v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
    if (integers_ok && v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (v.is_null()) return std::nullopt;
    drop(key, "wrong_type",
         std::string{"must be a string"} + (integers_ok ? " or an integer" : "") + ", got " + type_of(v));
    return std::nullopt;
  }

  std::vector<std::string> list_of(const char* key, const json& array, bool integers_ok) {
    std::vector<std::string> values;
    std::size_t over = 0;
    for (const auto& item : array) {
      if (item.is_array() || item.is_object()) {
        drop(key, "wrong_type", "a list entry must be a string, got " + type_of(item));
        continue;
      }
      auto one = scalar(key, item, integers_ok);
      if (!one || std::find(values.begin(), values.end(), *one) != values.end()) continue;
      if (values.size() == canonical_max_values) {
        ++over;
        continue;
      }
      values.push_back(std::move(*one));
    }
    if (over > 0) {
      drop(key, "too_many_values",
           "at most " + std::to_string(canonical_max_values) + " values; " + std::to_string(over) + " more dropped");
    }
    return values;
  }

  const json& payload_;
  dropped_fields& dropped_;
  std::optional<field_error> error_;
};

std::optional<std::int64_t> parse_event_time(const json* v, reader& r) {
  static constexpr const char* not_a_time = "not a unix timestamp or RFC 3339 time";
  if (v == nullptr) {
    r.fail("event_time", "missing");
    return std::nullopt;
  }
  std::optional<std::int64_t> seconds;
  std::string shown;
  if (v->is_number_unsigned() || v->is_number_integer()) {
    const auto n =
        v->is_number_unsigned()
            ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                  v->get<std::uint64_t>(), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
            : v->get<std::int64_t>();
    seconds = n;
    shown = std::to_string(n);
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d > 0 && d < 9.2e18) seconds = static_cast<std::int64_t>(std::floor(d));
    shown = v->dump();
  } else if (v->is_string()) {
    const std::string_view s = trim_ascii_space(v->get_ref<const std::string&>());
    shown = std::string{s};
    if (!s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), is_ascii_digit)) {
      seconds = std::stoll(std::string{s});
    } else if (const auto t = parse_rfc3339(s)) {
      if (*t <= 0) {
        r.fail("event_time", "must be after 1970-01-01, got " + quote_value(s));
        return std::nullopt;
      }
      return t;
    }
  } else {
    r.fail("event_time", std::string{not_a_time} + ", got " + type_of(*v));
    return std::nullopt;
  }
  if (!seconds || *seconds <= 0) {
    r.fail("event_time", std::string{not_a_time} + ", got " + quote_value(shown));
    return std::nullopt;
  }
  if (*seconds >= millisecond_threshold) {
    r.fail("event_time", shown + " looks like milliseconds; send unix seconds");
    return std::nullopt;
  }
  if (*seconds > max_event_time) {
    r.fail("event_time", std::string{not_a_time} + ", got " + quote_value(shown));
    return std::nullopt;
  }
  return seconds;
}

std::optional<double> parse_value(const json* v, reader& r) {
  if (v == nullptr) return std::nullopt;
  double d = 0;
  if (v->is_number()) {
    d = v->get<double>();
  } else if (v->is_string()) {
    // DjangoJSONEncoder writes Decimal as a string: accept a plain decimal number.
    const std::string_view s = trim_ascii_space(v->get_ref<const std::string&>());
    if (s.empty()) return std::nullopt;
    std::size_t i = s.front() == '-' ? 1 : 0;
    std::size_t int_digits = 0;
    std::size_t frac_digits = 0;
    while (i < s.size() && is_ascii_digit(s[i])) ++i, ++int_digits;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && is_ascii_digit(s[i])) ++i, ++frac_digits;
    }
    if (i != s.size() || int_digits == 0 || int_digits > 15) {
      r.drop("value", "invalid_value", "must be a number, got " + quote_value(s));
      return std::nullopt;
    }
    d = std::strtod(std::string{s}.c_str(), nullptr);
  } else {
    r.drop("value", "invalid_value", "must be a number, got " + type_of(*v));
    return std::nullopt;
  }
  if (!std::isfinite(d)) {
    r.drop("value", "invalid_value", "must be a finite number");
    return std::nullopt;
  }
  return d;
}

std::optional<std::string> parse_currency(reader& r) {
  const json* v = r.find("currency");
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    r.drop("currency", "invalid_currency", "must be a 3-letter ISO 4217 code, got " + type_of(*v));
    return std::nullopt;
  }
  const std::string_view s = trim_ascii_space(v->get_ref<const std::string&>());
  if (s.empty()) return std::nullopt;
  std::string code{s};
  for (char& c : code) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  if (code.size() != 3 || !std::all_of(code.begin(), code.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    r.drop("currency", "invalid_currency", "must be a 3-letter ISO 4217 code, got " + quote_value(s));
    return std::nullopt;
  }
  return code;
}

std::optional<consent_value> parse_consent_value(const json& consent, const char* key, reader& r) {
  const auto it = consent.find(key);
  if (it == consent.end() || it->is_null()) return std::nullopt;
  const std::string field = std::string{"consent."} + key;
  if (!it->is_string()) {
    r.drop(field, "invalid_consent", "must be GRANTED or DENIED, got " + type_of(*it));
    return std::nullopt;
  }
  std::string v{trim_ascii_space(it->get_ref<const std::string&>())};
  for (char& c : v) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  if (v == "GRANTED") return consent_value::granted;
  if (v == "DENIED") return consent_value::denied;
  r.drop(field, "invalid_consent", "must be GRANTED or DENIED, got " + quote_value(it->get_ref<const std::string&>()));
  return std::nullopt;
}

}  // namespace

std::string_view to_string(consent_value v) { return v == consent_value::granted ? "GRANTED" : "DENIED"; }

const nlohmann::json* canonical_event::extra_for(std::string_view provider_key) const {
  if (!extra.is_object()) return nullptr;
  const auto it = extra.find(provider_key);
  if (it == extra.end() || !it->is_object() || it->empty()) return nullptr;
  return &*it;
}

std::string field_error::message() const { return field + ": " + problem; }

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':') return std::nullopt;
  if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return std::nullopt;
  const auto y = digits(s.substr(0, 4));
  const auto mo = digits(s.substr(5, 2));
  const auto d = digits(s.substr(8, 2));
  const auto h = digits(s.substr(11, 2));
  const auto mi = digits(s.substr(14, 2));
  const auto se = digits(s.substr(17, 2));
  if (!y || !mo || !d || !h || !mi || !se || !valid_date(*y, *mo, *d) || *h > 23 || *mi > 59 || *se > 60) {
    return std::nullopt;
  }
  std::string_view rest = s.substr(19);
  if (!rest.empty() && rest.front() == '.') {
    std::size_t n = 1;
    while (n < rest.size() && is_ascii_digit(rest[n])) ++n;
    if (n == 1) return std::nullopt;
    rest.remove_prefix(n);
  }
  std::int64_t offset = 0;
  if (rest == "Z" || rest == "z") {
    offset = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    const auto oh = digits(rest.substr(1, 2));
    const auto om = digits(rest.substr(4, 2));
    if (!oh || !om || *oh > 23 || *om > 59) return std::nullopt;
    offset = (*oh * 3600 + *om * 60) * (rest[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  const std::int64_t seconds_of_day = *h * 3600 + *mi * 60 + std::min(*se, 59);  // a leap second counts as :59
  return days_from_civil(*y, static_cast<unsigned>(*mo), static_cast<unsigned>(*d)) * 86400 + seconds_of_day - offset;
}

std::string format_rfc3339_utc(std::int64_t unix_seconds) {
  const std::chrono::sys_seconds t{std::chrono::seconds{unix_seconds}};
  const auto day = std::chrono::floor<std::chrono::days>(t);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{t - day};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

void merge_extra(nlohmann::json& event, const nlohmann::json* extra) {
  if (extra != nullptr && extra->is_object()) event.merge_patch(*extra);
}

namespace {

// action_source (one of canonical_action_sources) and event_source_url (an http or https URL).
void parse_origin(reader& r, canonical_event& e) {
  if (auto source = r.text("action_source")) {
    if (std::find(canonical_action_sources.begin(), canonical_action_sources.end(), *source) ==
        canonical_action_sources.end()) {
      std::string known;
      for (const auto s : canonical_action_sources) known += (known.empty() ? "" : ", ") + std::string{s};
      r.drop("action_source", "unknown_action_source",
             "must be one of " + known + ", got " + quote_value(*source) + "; " + e.action_source + " used");
    } else {
      e.action_source = std::move(*source);
    }
  }
  e.event_source_url = r.text("event_source_url");
  if (e.event_source_url && !e.event_source_url->starts_with("https://") &&
      !e.event_source_url->starts_with("http://")) {
    // Not quoted: a page URL's query string may carry personal data.
    r.drop("event_source_url", "invalid_url", "must be an http:// or https:// URL");
    e.event_source_url.reset();
  }
}

// Who the event is about: contact details, browser and click ids, the CRM's ids.
void parse_user_fields(reader& r, canonical_event& e) {
  e.email = r.list("email");
  e.phone = r.list("phone", true);
  e.first_name = r.list("first_name");
  e.last_name = r.list("last_name");
  e.city = r.list("city");
  e.state = r.list("state");
  e.zip = r.list("zip", true);
  e.country = r.list("country");
  e.date_of_birth = r.list("date_of_birth", true);
  e.gender = r.list("gender");
  e.external_id = r.list("external_id", true);
  e.client_ip = r.text("client_ip");
  e.user_agent = r.text("user_agent");
  e.fbc = r.text("fbc");
  e.fbp = r.text("fbp");
  e.ttclid = r.text("ttclid");
  e.ttp = r.text("ttp");
  e.gclid = r.text("gclid");
  e.gbraid = r.text("gbraid");
  e.wbraid = r.text("wbraid");
  e.lead_id = r.text("lead_id", true);
}

// The optional consent object.
void parse_consent(reader& r, canonical_event& e) {
  const json* consent = r.find("consent");
  if (consent == nullptr) return;
  if (!consent->is_object()) {
    r.drop("consent", "wrong_type", "must be an object, got " + type_of(*consent));
    return;
  }
  e.consent.ad_user_data = parse_consent_value(*consent, "ad_user_data", r);
  e.consent.ad_personalization = parse_consent_value(*consent, "ad_personalization", r);
}

// The optional extra object: each provider's key, when present, must be an object too.
void parse_extra(reader& r, canonical_event& e) {
  const json* extra = r.find("extra");
  if (extra == nullptr) return;
  if (!extra->is_object()) {
    r.drop("extra", "wrong_type", "must be an object, got " + type_of(*extra));
    return;
  }
  e.extra = *extra;
  for (const auto key : canonical_extra_keys) {
    const auto it = e.extra.find(key);
    if (it != e.extra.end() && !it->is_null() && !it->is_object()) {
      r.drop("extra." + std::string{key}, "wrong_type", "must be an object, got " + type_of(*it));
      e.extra.erase(it);
    }
  }
}

}  // namespace

canonical_parse_result parse_canonical_event(const nlohmann::json& payload) {
  if (!payload.is_object()) return field_error{"payload", "must be a JSON object, got " + type_of(payload)};
  canonical_event e;
  reader r{payload, e.dropped};

  const auto time = parse_event_time(r.find("event_time"), r);
  if (r.failed()) return *r.error();
  e.event_time = *time;

  e.value = parse_value(r.find("value"), r);
  e.currency = parse_currency(r);
  e.order_id = r.text("order_id", true);
  parse_origin(r, e);
  parse_user_fields(r, e);
  parse_consent(r, e);
  parse_extra(r, e);
  return e;
}

}  // namespace outbox::providers

// /status?provider=P&destination=NAME&state=S: which destinations the page
// lists. With a thousand of them, the page shows a count by state first and
// the first 50 rows (the ones that need a look first); the query narrows it.
#include <algorithm>
#include <cctype>

#include "dispatcher/ops/name_pattern.hpp"
#include "dispatcher/ops/status_page.hpp"

namespace outbox {
namespace {

// %XX and '+' decoded; a malformed escape is kept as it is.
std::string url_decode(std::string_view in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%' && i + 2 < in.size() && std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& status_page_states() {
  static const std::vector<std::string> states{"delivering",   "paused",   "automatic",
                                               "circuit-open", "unusable", "not-configured"};
  return states;
}

std::string status_state_of(const destination_view& v) {
  if (v.state == "paused") return "paused";
  if (v.state == "paused (automatic)" || v.state == "probing") return "automatic";
  if (v.state == "circuit open") return "circuit-open";
  if (v.state == "not usable") return "unusable";
  if (v.state == "not configured") return "not-configured";
  return "delivering";
}

status_page_filter parse_status_query(std::string_view target) {
  status_page_filter f;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return f;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    std::string value = url_decode(pair.substr(eq + 1)).substr(0, 200);
    const std::string_view name = pair.substr(0, eq);
    if (name == "provider") f.provider = std::move(value);
    if (name == "destination") f.destination = std::move(value);
    if (name == "state") f.state = std::move(value);
  }
  return f;
}

bool status_page_filter::matches(const metrics::destination_key& k, const destination_view& v) const {
  if (!provider.empty() && k.first != provider) return false;
  if (!destination.empty() && !matches_name_pattern(k.second, destination)) return false;
  return state.empty() || status_state_of(v) == state;
}

}  // namespace outbox

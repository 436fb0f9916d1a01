#include "providers/http/http_request_builder.hpp"

#include <algorithm>
#include <charconv>

#include <boost/asio/ip/address.hpp>

namespace outbox::providers::detail {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

constexpr std::string_view user_agent = "outbox-dispatcher/0.1";

[[nodiscard]] bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

[[nodiscard]] parsed_url url_error(std::string text) { return {std::nullopt, std::move(text)}; }

[[nodiscard]] bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// Splits "host[:port]" or "[v6]:port"; `port` keeps its default when none is given.
[[nodiscard]] std::optional<std::string> parse_authority(std::string_view authority, std::string_view& host,
                                                         std::uint16_t& port) {
  std::optional<std::string_view> port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return "unterminated IPv6 literal in URL";
    host = authority.substr(1, close - 1);
    const auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return "unexpected text after IPv6 literal in URL";
      port_text = after.substr(1);
    }
    error_code ec;
    (void)asio::ip::make_address_v6(std::string(host), ec);
    if (ec) return "invalid IPv6 literal in URL";
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (!std::all_of(host.begin(), host.end(), is_host_char)) return "invalid host name in URL";
  }
  if (host.empty()) return "URL has no host";
  if (!port_text) return std::nullopt;
  unsigned value = 0;
  const auto* end = port_text->data() + port_text->size();
  const auto [ptr, ec] = std::from_chars(port_text->data(), end, value);
  if (port_text->empty() || ec != std::errc{} || ptr != end || value == 0 || value > 65535)
    return "invalid port in URL";
  port = static_cast<std::uint16_t>(value);
  return std::nullopt;
}

}  // namespace

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

parsed_url parse_url(std::string_view url) {
  if (std::any_of(url.begin(), url.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }))
    return url_error("URL contains spaces or control characters");
  target_url out;
  if (istarts_with(url, "https://")) {
    url.remove_prefix(8);
  } else if (istarts_with(url, "http://")) {
    out.tls = false;
    out.port = 80;
    url.remove_prefix(7);
  } else {
    return url_error("URL must start with https:// or http://");
  }

  const auto authority_end = url.find_first_of("/?#");
  const std::string_view authority = url.substr(0, authority_end);
  std::string_view rest = authority_end == std::string_view::npos ? std::string_view{} : url.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) return url_error("credentials in the URL are not supported");

  std::string_view host;
  if (auto problem = parse_authority(authority, host, out.port)) return url_error(std::move(*problem));

  out.host = lowered(host);
  error_code ip_ec;
  const auto address = asio::ip::make_address(out.host, ip_ec);
  out.host_is_ip = !ip_ec;

  rest = rest.substr(0, rest.find('#'));
  // Appended rather than `"/" + std::string(...)`: GCC 12 at -O3 prints false
  // -Wstringop-overflow warnings on that form (a user's Release build shows them).
  out.target = (rest.empty() || rest.front() == '?') ? std::string(1, '/').append(rest) : std::string(rest);

  out.host_header =
      (out.host_is_ip && address.is_v6()) ? std::string(1, '[').append(out.host).append(1, ']') : out.host;
  if (out.port != (out.tls ? 443 : 80)) out.host_header.append(1, ':').append(std::to_string(out.port));
  out.origin = std::string(out.tls ? "https://" : "http://") + out.host_header;
  return {std::move(out), {}};
}

namespace {

[[nodiscard]] bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

[[nodiscard]] bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char); }

// CR, LF or NUL in a value would let a caller inject headers. One pass: find_first_of
// called memchr for each character (145 calls per signed webhook request).
[[nodiscard]] bool is_field_value(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

}  // namespace

namespace {

// Beast's fields trim optional white space around a value (RFC 7230 OWS).
[[nodiscard]] std::string_view trimmed_value(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Beast stores a field's name and value lengths in 16 bits.
constexpr std::size_t max_field_part = 65533;

[[nodiscard]] bool is_ours(std::string_view name) {
  return iequals(name, "host") || iequals(name, "content-length") || iequals(name, "transfer-encoding");
}

// Beast's prepare_payload(): a Content-Length for a body, and for an empty one
// only on the methods that expect a body (verbs compare case-sensitively).
[[nodiscard]] bool sends_content_length(std::string_view method, std::size_t body_size) {
  return body_size > 0 || method == "POST" || method == "PUT" || method == "OPTIONS";
}

[[nodiscard]] bool named_earlier(const header_list& headers, std::size_t i) {
  for (std::size_t j = 0; j < i; ++j) {
    if (iequals(headers[j].first, headers[i].first)) return true;
  }
  return false;
}

// The caller's fields in the order Beast's insert() keeps them: each name (any
// case) where it first appears, with every later field of that name right
// after it. Ours are left out. No allocation: a request has a handful.
void append_fields(std::string& w, const header_list& headers) {
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (is_ours(headers[i].first) || named_earlier(headers, i)) continue;
    for (std::size_t k = i; k < headers.size(); ++k) {
      const auto& [name, value] = headers[k];
      if (k == i || iequals(name, headers[i].first))
        w.append(name).append(": ").append(trimmed_value(value)).append("\r\n");
    }
  }
}

}  // namespace

std::optional<std::string> build_wire(http_request& req, const target_url& url, wire_request& out) {
  if (!is_token(req.method)) return "invalid HTTP method";
  if (req.method == "TRACE" && !req.body.empty()) return "a TRACE request cannot carry a body";
  bool has_user_agent = false, has_content_type = false;
  std::size_t fields_size = 0;
  for (const auto& [name, value] : req.headers) {
    if (!is_token(name)) return "invalid header name";
    if (!is_field_value(value)) return "invalid value for header '" + name + "'";
    if (is_ours(name)) continue;
    if (name.size() > max_field_part || value.size() > max_field_part)
      return "header '" + name.substr(0, 64) + "' is too long";
    has_user_agent = has_user_agent || iequals(name, "user-agent");
    has_content_type = has_content_type || iequals(name, "content-type");
    fields_size += name.size() + value.size() + 4;
  }
  const std::string length_text = std::to_string(req.body.size());
  std::string& w = out.bytes;
  w.clear();
  const bool body_apart = req.body.size() > wire_body_copy_limit;
  constexpr std::size_t our_fields_room = 160;  // Host's name, User-Agent, Content-Type, Content-Length, CRLFs
  w.reserve(req.method.size() + url.target.size() + fields_size + url.host_header.size() + our_fields_room +
            (body_apart ? 0 : req.body.size()));
  w.append(req.method).append(" ").append(url.target).append(" HTTP/1.1\r\n");
  append_fields(w, req.headers);
  w.append("Host: ").append(url.host_header).append("\r\n");
  if (!has_user_agent) w.append("User-Agent: ").append(user_agent).append("\r\n");
  if (!req.body.empty() && !has_content_type) w.append("Content-Type: application/json\r\n");
  if (sends_content_length(req.method, req.body.size()))
    w.append("Content-Length: ").append(length_text).append("\r\n");
  w.append("\r\n");
  if (body_apart) {
    out.large_body = std::move(req.body);
    req.body.clear();
  } else {
    w.append(req.body);
    out.large_body.clear();
  }
  out.head = req.method == "HEAD";
  return std::nullopt;
}

}  // namespace outbox::providers::detail

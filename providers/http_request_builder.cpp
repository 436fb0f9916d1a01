#include "providers/http_request_builder.hpp"

#include <algorithm>
#include <charconv>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/field.hpp>

namespace outbox::providers::detail {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr std::string_view user_agent = "outbox-dispatcher/0.1";

[[nodiscard]] char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
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
  out.target = (rest.empty() || rest.front() == '?') ? "/" + std::string(rest) : std::string(rest);

  out.host_header = (out.host_is_ip && address.is_v6()) ? "[" + out.host + "]" : out.host;
  if (out.port != (out.tls ? 443 : 80)) out.host_header += ":" + std::to_string(out.port);
  out.origin = std::string(out.tls ? "https://" : "http://") + out.host_header;
  return {std::move(out), {}};
}

namespace {

[[nodiscard]] bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

[[nodiscard]] bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char); }

// CR, LF or NUL in a value would let a caller inject headers.
[[nodiscard]] bool is_field_value(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

}  // namespace

std::optional<std::string> build_message(const http_request& req, const target_url& url, request_message& msg) {
  if (!is_token(req.method)) return "invalid HTTP method";
  msg.method_string(req.method);
  msg.target(url.target);
  msg.version(11);
  for (const auto& [name, value] : req.headers) {
    if (!is_token(name)) return "invalid header name";
    if (!is_field_value(value)) return "invalid value for header '" + name + "'";
    // Framing and routing are ours to set; a stale value here would corrupt the exchange.
    if (iequals(name, "host") || iequals(name, "content-length") || iequals(name, "transfer-encoding")) continue;
    msg.insert(name, value);
  }
  msg.set(http::field::host, url.host_header);
  if (msg.find(http::field::user_agent) == msg.end()) msg.set(http::field::user_agent, user_agent);
  if (!req.body.empty() && msg.find(http::field::content_type) == msg.end())
    msg.set(http::field::content_type, "application/json");
  msg.body() = req.body;
  msg.prepare_payload();
  return std::nullopt;
}

std::string wire_bytes(const request_message& msg) {
  std::string wire;
  wire.reserve(256 + msg.body().size());
  wire.append(msg.method_string()).append(" ").append(msg.target()).append(" HTTP/1.1\r\n");
  for (const auto& field : msg) wire.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
  wire.append("\r\n").append(msg.body());
  return wire;
}

}  // namespace outbox::providers::detail

#include "providers/http/http_response_reader.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/optional/optional.hpp>

namespace outbox::providers {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using beast_view = beast::string_view;  // std::string_view in our builds, but the fuzz build may differ

[[nodiscard]] std::string lowered(beast_view s) {
  std::string out(s.data(), s.size());
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

class response_error_category_impl final : public boost::system::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "outbox.http_response"; }
  [[nodiscard]] std::string message(int e) const override {
    switch (static_cast<response_error>(e)) {
      case response_error::header_too_large: return "response header too large";
      case response_error::too_many_fields: return "too many header fields";
      case response_error::chunk_extension_too_long: return "chunk extension too long";
      case response_error::chunk_metadata_too_large: return "chunk-size line or trailers too large";
      case response_error::switching_protocols: return "unexpected 101 Switching Protocols";
      case response_error::too_many_interim: return "too many interim (1xx) responses";
    }
    return "unknown response error";
  }
};

// What one exchange may still spend on headers; shared by its interim and final responses.
struct header_budget {
  response_limits limits;
  std::size_t used = 0;  // status lines and fields so far, trailers included

  [[nodiscard]] error_code charge(std::size_t n) {
    used += n;
    return used > limits.max_header_bytes ? error_code{response_error::header_too_large} : error_code{};
  }
  [[nodiscard]] std::uint32_t left() const {
    const std::size_t rest = limits.max_header_bytes - std::min(used, limits.max_header_bytes);
    return static_cast<std::uint32_t>(std::min<std::size_t>(rest, std::numeric_limits<std::uint32_t>::max()));
  }
};

// One message (interim or final) straight into an http_response, with our caps
// checked as Beast reports each piece.
class message_parser final : public http::basic_parser<false> {
 public:
  message_parser(header_budget& budget, bool head_request) : budget_(budget) {
    eager(true);
    skip(head_request);
    body_limit(budget.limits.max_body_bytes);
    header_limit(budget.left());
  }

  [[nodiscard]] int status() const { return response_.status; }
  [[nodiscard]] http_response take() { return std::move(response_); }
  // Beast asserts (debug builds) when a chunked body that starts with its
  // last chunk ("0\r\n") is presented again with fewer than 5 bytes. Every
  // valid chunked body needs 5 ("0\r\n\r\n"), so waiting for them is free.
  [[nodiscard]] bool needs_more_before_first_chunk(std::size_t buffered) const {
    return is_header_done() && chunked() && chunk_headers_ == 0 && buffered < 5;
  }

 private:
  void on_request_impl(http::verb, beast_view, beast_view, int, error_code& ec) override {
    ec = http::error::bad_version;  // unreachable: this parser reads responses
  }
  void on_response_impl(int code, beast_view reason, int, error_code& ec) override {
    response_.status = code;
    ec = budget_.charge(reason.size() + 15);  // "HTTP/1.1 200 " reason CRLF
  }
  void on_field_impl(http::field, beast_view name, beast_view value, error_code& ec) override {
    if (++fields_ > budget_.limits.max_fields) {
      ec = response_error::too_many_fields;
      return;
    }
    ec = budget_.charge(name.size() + value.size() + 4);  // name ": " value CRLF
    if (!ec) response_.headers.emplace_back(lowered(name), std::string(value.data(), value.size()));
  }
  void on_header_impl(error_code& ec) override { ec = budget_.charge(2); }
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (length) response_.body.reserve(static_cast<std::size_t>(*length));  // already checked against body_limit
  }
  std::size_t on_body_impl(beast_view body, error_code&) override {
    response_.body.append(body.data(), body.size());
    return body.size();
  }
  // Beast hands over a chunk line only once it is complete; the reader's
  // buffer cap is what stops an endless one, this stops merely long ones.
  void on_chunk_header_impl(std::uint64_t, beast_view extensions, error_code& ec) override {
    ++chunk_headers_;
    if (extensions.size() > budget_.limits.max_chunk_extension) ec = response_error::chunk_extension_too_long;
  }
  std::size_t on_chunk_body_impl(std::uint64_t, beast_view body, error_code&) override {
    response_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  header_budget& budget_;
  std::size_t fields_ = 0;
  std::size_t chunk_headers_ = 0;
  http_response response_;
};

}  // namespace

const boost::system::error_category& response_error_category() {
  static const response_error_category_impl instance;
  return instance;
}

error_code make_error_code(response_error e) { return {static_cast<int>(e), response_error_category()}; }

bool is_size_refusal(const error_code& ec) {
  return ec == http::error::body_limit || ec == response_error::header_too_large ||
         ec == response_error::too_many_fields || ec == response_error::chunk_extension_too_long ||
         ec == response_error::chunk_metadata_too_large;
}

std::string describe_read_error(const error_code& ec, const response_limits& limits) {
  const auto n = [](std::size_t v) { return std::to_string(v); };
  if (ec == http::error::body_limit) return "body exceeds " + n(limits.max_body_bytes) + " bytes";
  if (ec == response_error::header_too_large)
    return "header exceeds " + n(limits.max_header_bytes) + " bytes (status lines, fields and trailers)";
  if (ec == response_error::too_many_fields) return "more than " + n(limits.max_fields) + " header fields";
  if (ec == response_error::chunk_extension_too_long)
    return "chunk extension longer than " + n(limits.max_chunk_extension) + " bytes";
  if (ec == response_error::chunk_metadata_too_large)
    return "chunk-size line or trailers exceed " + n(limits.max_header_bytes) + " bytes";
  if (ec == response_error::too_many_interim) return "more than " + n(limits.max_interim) + " interim (1xx) responses";
  return ec.message();
}

// ---------------------------------------------------------------------------

struct http_response_reader::impl {
  impl(const response_limits& limits, bool head) : budget{limits}, head_request(head) {
    parser.emplace(budget, head_request);
  }

  [[nodiscard]] error_code parse();
  [[nodiscard]] error_code end_message();
  [[nodiscard]] error_code overflow() const {
    return parser->is_header_done() ? response_error::chunk_metadata_too_large : response_error::header_too_large;
  }
  [[nodiscard]] error_code translate(const error_code& ec) const {
    if (ec == http::error::header_limit) return response_error::header_too_large;
    if (ec == http::error::buffer_overflow) return overflow();
    return ec;
  }

  header_budget budget;
  bool head_request;
  // Holds only bytes the parser still needs (a header, a chunk line, trailers).
  beast::flat_buffer buffer{std::max<std::size_t>(budget.limits.max_header_bytes, 1)};
  std::optional<message_parser> parser;
  std::optional<http_response> response;  // the final one, once done
  error_code error;                       // sticky
  std::size_t interim = 0;
  bool received = false;
  bool keep = false;
};

error_code http_response_reader::impl::parse() {
  while (!response && buffer.size() > 0) {
    if (parser->needs_more_before_first_chunk(buffer.size())) break;
    error_code ec;
    const std::size_t used = parser->put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more || (!ec && used == 0 && !parser->is_done())) break;
    if (ec) return translate(ec);
    if (parser->is_done()) {
      if (auto failed = end_message()) return failed;
    }
  }
  if (!response && buffer.size() >= buffer.max_size()) return overflow();
  return {};
}

error_code http_response_reader::impl::end_message() {
  const int status = parser->status();
  if (status == 101) return response_error::switching_protocols;
  if (status >= 100 && status <= 199) {  // interim: skip it, the final response follows
    if (interim == budget.limits.max_interim) return response_error::too_many_interim;
    ++interim;
    parser.emplace(budget, head_request);
    return {};
  }
  keep = parser->keep_alive();
  response = parser->take();
  return {};
}

http_response_reader::http_response_reader(const response_limits& limits, bool head_request)
    : impl_(std::make_unique<impl>(limits, head_request)) {}

http_response_reader::~http_response_reader() = default;

boost::asio::mutable_buffer http_response_reader::prepare(std::size_t max_read) {
  auto& buffer = impl_->buffer;
  return buffer.prepare(std::min(max_read, buffer.max_size() - buffer.size()));
}

error_code http_response_reader::commit(std::size_t n) {
  auto& s = *impl_;
  s.buffer.commit(n);
  s.received = s.received || n > 0;
  if (s.error || s.response) return s.error;
  s.error = s.parse();
  return s.error;
}

error_code http_response_reader::commit_eof() {
  auto& s = *impl_;
  if (s.error || s.response) return s.error;
  if (!s.parser->got_some()) {
    // Closed between responses: before any byte is the stale keep-alive case.
    s.error = s.interim > 0 ? http::error::partial_message : http::error::end_of_stream;
    return s.error;
  }
  error_code ec;
  s.parser->put_eof(ec);  // completes a body that runs to the end of the stream
  if (!ec && s.parser->is_done()) ec = s.end_message();
  if (!ec && !s.response) ec = http::error::partial_message;
  s.error = s.translate(ec);
  return s.error;
}

bool http_response_reader::done() const { return impl_->response.has_value(); }

bool http_response_reader::got_some() const { return impl_->received; }

bool http_response_reader::keep_alive() const { return done() && impl_->keep && impl_->buffer.size() == 0; }

std::size_t http_response_reader::interim_responses() const { return impl_->interim; }

http_response http_response_reader::take_response() { return std::move(impl_->response).value(); }

response_read read_http_response(std::string_view bytes, const response_limits& limits, bool head_request,
                                 std::size_t max_read) {
  http_response_reader reader{limits, head_request};
  response_read out;
  max_read = std::max<std::size_t>(max_read, 1);
  while (!out.error && !reader.done()) {
    if (bytes.empty()) {
      out.error = reader.commit_eof();
      break;
    }
    const auto room = reader.prepare(max_read);
    const std::size_t n = std::min(room.size(), bytes.size());
    if (n == 0) {
      out.error = http::error::buffer_overflow;  // unreachable: a full buffer is reported by commit
      break;
    }
    std::memcpy(room.data(), bytes.data(), n);
    bytes.remove_prefix(n);
    out.error = reader.commit(n);
  }
  out.interim_responses = reader.interim_responses();
  if (!out.error && reader.done()) {
    out.keep_alive = reader.keep_alive() && bytes.empty();  // unread bytes are out of step too
    out.response = reader.take_response();
  }
  return out;
}

}  // namespace outbox::providers

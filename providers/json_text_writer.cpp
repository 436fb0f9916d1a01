#include "providers/json_text_writer.hpp"

#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <stdexcept>

#include <unicode/utf8.h>

namespace outbox::providers {
namespace {

// Bytes that cannot go as they are: control characters, '"', '\\' and every
// byte of a multi-byte sequence (checked as UTF-8). A table: this runs on each
// byte of every hash a batch carries.
constexpr std::array<bool, 256> care_table = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
  return t;
}();

bool needs_care(unsigned char c) { return care_table[c]; }

void append_escaped_byte(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: {
      const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0x0f]};
      out.append(u, sizeof u);
    }
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  if (text.size() > static_cast<std::size_t>(INT32_MAX)) throw std::length_error("json_text_writer: string over 2 GiB");
  out.push_back('"');
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  const auto length = static_cast<std::int32_t>(text.size());
  std::int32_t i = 0;
  std::int32_t plain_from = 0;  // a run of bytes that go as they are
  while (i < length) {
    const unsigned char c = bytes[i];
    if (!needs_care(c)) {
      ++i;
      continue;
    }
    out.append(text.data() + plain_from, static_cast<std::size_t>(i - plain_from));
    if (c < 0x80) {
      append_escaped_byte(out, c);
      ++i;
    } else {
      const std::int32_t start = i;
      UChar32 code_point = 0;
      U8_NEXT(bytes, i, length, code_point);
      if (code_point < 0) out += "\xEF\xBF\xBD";  // not UTF-8: U+FFFD, like json::dump's replace
      else out.append(text.data() + start, static_cast<std::size_t>(i - start));
    }
    plain_from = i;
  }
  out.append(text.data() + plain_from, static_cast<std::size_t>(length - plain_from));
  out.push_back('"');
}

json_text_writer::json_text_writer(std::string& out) : out_(out) { out_.push_back('{'); }

void json_text_writer::key(std::string_view name) {
  if (finished_) throw std::logic_error("json_text_writer: written to after finish");
  if (!empty_) out_.push_back(',');
  empty_ = false;
  append_json_string(out_, name);
  out_.push_back(':');
}

void json_text_writer::field(std::string_view key_name, std::string_view value) {
  key(key_name);
  append_json_string(out_, value);
}

void json_text_writer::field(std::string_view key_name, std::int64_t value) {
  key(key_name);
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out_.append(digits, end);
}

void json_text_writer::field(std::string_view key_name, double value) {
  key(key_name);
  if (!std::isfinite(value)) {  // JSON has no infinity; json::dump writes null too
    out_ += "null";
    return;
  }
  char digits[40];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);  // shortest round trip
  if (ec != std::errc{}) throw std::logic_error("json_text_writer: a number did not fit");
  const std::string_view text{digits, static_cast<std::size_t>(end - digits)};
  out_ += text;
  // Still a number with a fraction when read back, as json::dump writes 100.0.
  if (text.find_first_of(".e") == std::string_view::npos) out_ += ".0";
}

void json_text_writer::field(std::string_view key_name, const std::vector<std::string>& values) {
  key(key_name);
  out_.push_back('[');
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out_.push_back(',');
    append_json_string(out_, values[i]);
  }
  out_.push_back(']');
}

void json_text_writer::open(std::string_view key_name) {
  levels_.push_back({out_.size(), empty_});
  key(key_name);
  out_.push_back('{');
  empty_ = true;
}

void json_text_writer::close(bool keep_when_empty) {
  if (levels_.empty()) throw std::logic_error("json_text_writer: close without open");
  const level opened = levels_.back();
  levels_.pop_back();
  if (empty_ && !keep_when_empty) {
    out_.resize(opened.start);
    empty_ = opened.parent_was_empty;
    return;
  }
  out_.push_back('}');
  empty_ = false;
}

void json_text_writer::finish() {
  if (!levels_.empty()) throw std::logic_error("json_text_writer: finish with an object still open");
  if (finished_) throw std::logic_error("json_text_writer: finished twice");
  finished_ = true;
  out_.push_back('}');
}

}  // namespace outbox::providers

#include "db/params.hpp"

#include <charconv>
#include <utility>

namespace outbox::db {

array_literal::array_literal(std::size_t reserve_bytes) {
  text_.reserve(reserve_bytes + 2);
  text_ += '{';
}

void array_literal::separate() {
  if (text_.size() > 1) text_ += ',';
}

void array_literal::add_int(std::int64_t value) {
  separate();
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  text_.append(digits, end);
}

void array_literal::add_bool(bool value) {
  separate();
  text_ += value ? 't' : 'f';
}

void array_literal::add_text(std::string_view value) {
  separate();
  text_ += '"';
  for (const char c : value) {
    if (c == '"' || c == '\\') text_ += '\\';
    text_ += c;
  }
  text_ += '"';
}

void array_literal::add_null() {
  separate();
  text_ += "NULL";
}

std::string array_literal::finish() && {
  text_ += '}';
  return std::move(text_);
}

std::string int_array(std::span<const std::int64_t> values) {
  array_literal out(values.size() * 8);
  for (const std::int64_t v : values) out.add_int(v);
  return std::move(out).finish();
}

std::string text_array(std::span<const std::optional<std::string>> values) {
  array_literal out(values.size() * 16);
  for (const auto& v : values) v ? out.add_text(*v) : out.add_null();
  return std::move(out).finish();
}

std::string text_array(std::span<const std::string> values) {
  array_literal out(values.size() * 16);
  for (const auto& v : values) out.add_text(v);
  return std::move(out).finish();
}

std::string bool_array(const std::vector<bool>& values) {
  array_literal out(values.size() * 2);
  for (const bool v : values) out.add_bool(v);
  return std::move(out).finish();
}

}  // namespace outbox::db

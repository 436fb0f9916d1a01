#pragma once
// Writes a compact JSON object straight into a string: what a provider's hot
// path uses instead of building an nlohmann::json document and dumping it
// (issue 13: the document's allocations and json::dump's escaping were a fifth
// of a batched Meta row's CPU). Keys are written in the order given; strings
// are escaped as RFC 8259 requires, and bytes that are not UTF-8 become U+FFFD,
// as json::dump does with error_handler_t::replace.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace outbox::providers {

// Appends `text` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

class json_text_writer {
 public:
  // Opens the root object at the end of `out`.
  explicit json_text_writer(std::string& out);

  void field(std::string_view key, std::string_view value);
  void field(std::string_view key, const char* value) { field(key, std::string_view{value}); }
  void field(std::string_view key, std::int64_t value);
  void field(std::string_view key, double value);
  void field(std::string_view key, const std::vector<std::string>& values);  // an array of strings

  // A nested object; close() ends it. close(false) removes it again, key
  // included, when nothing was written into it.
  void open(std::string_view key);
  void close(bool keep_when_empty = true);
  // Ends the root object; nothing may be written after it.
  void finish();

 private:
  void key(std::string_view name);

  struct level {
    std::size_t start;      // where the key of this object began (its comma included)
    bool parent_was_empty;  // the enclosing object's state before this key
  };
  std::string& out_;
  std::vector<level> levels_;
  bool empty_ = true;  // nothing written yet into the innermost open object
  bool finished_ = false;
};

}  // namespace outbox::providers

#include "providers/json_text_writer.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace json_text_writer_test {

using namespace outbox::providers;
using nlohmann::json;

namespace {

std::string as_json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

}  // namespace

TEST_CASE("json text: strings are escaped as json::dump escapes them") {
  for (const std::string& text :
       {std::string{"plain"}, std::string{"quote \" and backslash \\"}, std::string{"tab\tline\nreturn\r"},
        std::string{"\b\f"}, std::string{"nul \0 and \x1f", 11}, std::string{"del \x7f"},
        std::string{"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"}, std::string{}}) {
    CAPTURE(text);
    CHECK(as_json_string(text) == json(text).dump());
    CHECK(json::parse(as_json_string(text)) == text);
  }
  CHECK(as_json_string(std::string{"\x01"}) == R"("\u0001")");
}

TEST_CASE("json text: bytes that are not UTF-8 become U+FFFD, as json::dump's replace handler writes them") {
  for (const std::string& text :
       {std::string{"Latin-1 caf\xE9"}, std::string{"cut \xE2\x82"}, std::string{"overlong \xC0\xAF"},
        std::string{"lone \x80 byte"}, std::string{"surrogate \xED\xA0\x80"},
        std::string{"above U+10FFFF \xF4\x90\x80\x80"}}) {
    CAPTURE(text);
    const std::string written = as_json_string(text);
    const json back = json::parse(written);  // still valid JSON
    CHECK(back.get<std::string>().find("\xEF\xBF\xBD") != std::string::npos);
    CHECK(written == json(text).dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

TEST_CASE("json text: numbers, lists and nested objects") {
  std::string out;
  json_text_writer w{out};
  w.field("i", std::int64_t{-9007199254740993});
  w.field("d", 120.5);
  w.field("whole", 100.0);
  w.field("tiny", 1e-7);
  w.field("inf", std::numeric_limits<double>::infinity());
  w.field("list", std::vector<std::string>{"a", "b\"c"});
  w.field("none", std::vector<std::string>{});
  w.open("o");
  w.field("k", "v");
  w.close();
  w.finish();
  const json back = json::parse(out);
  CHECK(back["i"] == -9007199254740993);
  CHECK(back["d"] == 120.5);
  CHECK(back["whole"].is_number_float());  // 100.0, not 100
  CHECK(back["tiny"] == 1e-7);
  CHECK(back["inf"].is_null());  // JSON has no infinity
  CHECK(back["list"] == json::array({"a", "b\"c"}));
  CHECK(back["none"] == json::array());
  CHECK(back["o"] == json{{"k", "v"}});
}

TEST_CASE("json text: an empty object closed with keep_when_empty false leaves no trace") {
  std::string out;
  json_text_writer w{out};
  w.open("first");
  w.close(false);  // the first key: no comma may stay behind
  w.field("a", "1");
  w.open("gone");
  w.close(false);
  w.open("kept");
  w.close();
  w.open("outer");
  w.open("inner");
  w.close(false);
  w.close(false);  // empty once its only child went
  w.finish();
  CHECK(out == R"({"a":"1","kept":{}})");
  CHECK_THROWS_AS(w.close(), std::logic_error);
  CHECK_THROWS_AS(w.field("late", "x"), std::logic_error);  // nothing after the closing brace
  CHECK_THROWS_AS(w.finish(), std::logic_error);
  CHECK(out == R"({"a":"1","kept":{}})");
}

}  // namespace json_text_writer_test

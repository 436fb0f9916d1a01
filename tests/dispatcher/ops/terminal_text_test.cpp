// Text from the database shown on a terminal: nothing a terminal acts on gets through.
#include "dispatcher/ops/terminal_text.hpp"

#include <doctest/doctest.h>

#include <string>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace terminal_text_test {

using outbox::terminal_text;

namespace {

// True when `s` holds no byte a terminal could act on: no C0, no DEL, no C1 lead
// (0xC2 0x80..0x9F) and no invalid UTF-8 left (checked by the escapes above).
bool inert(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x20 || b == 0x7F) return false;
    if (b == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("terminal_text keeps ordinary text, UTF-8 included") {
  CHECK(terminal_text("") == "");
  CHECK(terminal_text("HTTP 400: bad currency") == "HTTP 400: bad currency");
  CHECK(terminal_text("caf\xc3\xa9 \xe2\x82\xac 10, \xf0\x9f\x98\x80") ==
        "caf\xc3\xa9 \xe2\x82\xac 10, \xf0\x9f\x98\x80");
  CHECK(terminal_text("a\\x1b stays a backslash") == "a\\x1b stays a backslash");
  CHECK(terminal_text("\xc2\xa0nbsp (U+00A0 is not C1)") == "\xc2\xa0nbsp (U+00A0 is not C1)");
}

TEST_CASE("terminal_text escapes C0 controls and DEL") {
  CHECK(terminal_text("\x1b[2J") == "\\x1b[2J");
  CHECK(terminal_text("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07");
  CHECK(terminal_text("line\nnext\r\tend") == "line\\nnext\\r\\tend");
  CHECK(terminal_text(std::string("nul\0here", 8)) == "nul\\x00here");
  CHECK(terminal_text("del\x7f") == "del\\x7f");
  CHECK(terminal_text("\x01\x1f") == "\\x01\\x1f");
}

TEST_CASE("terminal_text escapes C1 controls and bidirectional overrides") {
  CHECK(terminal_text("\xc2\x9b"
                      "2J") == "\\u009b2J");  // U+009B, a one-byte CSI
  CHECK(terminal_text("\xc2\x80\xc2\x9f") == "\\u0080\\u009f");
  CHECK(terminal_text("abc\xe2\x80\xae"
                      "fed") == "abc\\u202efed");  // RIGHT-TO-LEFT OVERRIDE
  CHECK(terminal_text("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");
}

TEST_CASE("terminal_text shows bytes that are not valid UTF-8 as \\xNN") {
  CHECK(terminal_text("\xff") == "\\xff");
  CHECK(terminal_text("a\x80z") == "a\\x80z");                         // stray continuation byte
  CHECK(terminal_text("\xc0\x80") == "\\xc0\\x80");                    // overlong NUL
  CHECK(terminal_text("\xe0\x80\x9b") == "\\xe0\\x80\\x9b");           // overlong CSI
  CHECK(terminal_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a surrogate
  CHECK(terminal_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(terminal_text("\xe2\x82") == "\\xe2\\x82");                    // truncated
  CHECK(terminal_text("\xc3"
                      "A") == "\\xc3A");  // lead byte, then ASCII resumes
  // A raw C1 byte (Latin-1 CSI) is invalid UTF-8: escaped, never sent as is.
  CHECK(terminal_text("\x9b"
                      "2J") == "\\x9b2J");
}

TEST_CASE("terminal_text never leaves a control byte, whatever the input") {
  std::string all;
  for (int b = 0; b < 256; ++b) {
    all.push_back(static_cast<char>(b));
    all.push_back(static_cast<char>(0xC2));  // and every byte after a C1 lead
    all.push_back(static_cast<char>(b));
  }
  CHECK(inert(terminal_text(all)));
}

TEST_CASE("terminal_text caps its output without splitting an escape or a character") {
  CHECK(terminal_text("abcdef", 4) == "abcd");
  CHECK(terminal_text("ab\x1b"
                      "cd",
                      4) == "ab");  // "\x1b" (4 bytes) does not fit whole
  CHECK(terminal_text("ab\x1b"
                      "cd",
                      6) == "ab\\x1b");
  CHECK(terminal_text("a\xc3\xa9", 2) == "a");  // "é" is 2 bytes
  CHECK(terminal_text("a\xc3\xa9", 3) == "a\xc3\xa9");
  CHECK(terminal_text(std::string(200, 'x'), 80).size() == 80);
}

}  // namespace terminal_text_test

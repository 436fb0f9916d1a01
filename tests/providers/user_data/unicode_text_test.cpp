#include "providers/user_data/unicode_text.hpp"

#include <doctest/doctest.h>

#include <string>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace unicode_text_test {

using namespace outbox::providers;

TEST_CASE("unicode text: to_lower is JavaScript's toLowerCase") {
  // Expected values checked with node: "…".toLowerCase().
  CHECK(unicode::to_lower("NGUYỄN ĐẶNG") == "nguyễn đặng");
  CHECK(unicode::to_lower("ΣΟΦΙΑΣ") == "σοφιας");
  CHECK(unicode::to_lower("Σ") == "σ");  // alone: not final
  CHECK(unicode::to_lower("ΟΔΟΣ.") == "οδος.");
  CHECK(unicode::to_lower("İ") == "i\u0307");
  CHECK(unicode::to_lower("I") == "i");
  CHECK(unicode::to_lower("ı") == "ı");
  CHECK(unicode::to_lower("ẞ") == "ß");
  CHECK(unicode::to_lower("ＡＢＣ") == "ａｂｃ");
  CHECK(unicode::to_lower("ǅ") == "ǆ");
  CHECK(unicode::to_lower("") == "");
  CHECK(unicode::to_lower("\xc3") == "\uFFFD");  // truncated sequence
}

TEST_CASE("unicode text: blanks and punctuation") {
  CHECK(unicode::is_blank(' '));
  CHECK(unicode::is_blank('\t'));
  CHECK(unicode::is_blank(0xA0));    // no-break space
  CHECK(unicode::is_blank(0x3000));  // ideographic space
  CHECK(unicode::is_blank(0x200B));  // zero width space
  CHECK(unicode::is_blank(0xFEFF));
  CHECK_FALSE(unicode::is_blank('a'));
  for (const char c : std::string_view{"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"}) {
    CAPTURE(c);
    CHECK(unicode::is_punctuation(static_cast<char32_t>(c)));
  }
  CHECK(unicode::is_punctuation(0x2019));  // ’
  CHECK(unicode::is_punctuation(0xAB));    // «
  CHECK(unicode::is_punctuation(0x3002));  // 。
  CHECK_FALSE(unicode::is_punctuation('a'));
  CHECK_FALSE(unicode::is_punctuation('7'));
  CHECK_FALSE(unicode::is_punctuation(0xD7));    // × is a symbol
  CHECK_FALSE(unicode::is_punctuation(0x1EC5));  // ễ
}

TEST_CASE("unicode text: trim") {
  CHECK(unicode::trim("  a b \t") == "a b");
  CHECK(unicode::trim("\u00a0\u3000x\u200b\ufeff") == "x");
  CHECK(unicode::trim("   ") == "");
  CHECK(unicode::trim("") == "");
  CHECK(unicode::trim(" \xff ") == "\xff");  // invalid bytes are not blanks
}

TEST_CASE("unicode text: lower_filtered") {
  CHECK(unicode::lower_filtered(" Jean -  Luc ", unicode::is_punctuation, unicode::inner_blanks::one_space) ==
        "jean luc");
  CHECK(unicode::lower_filtered(" San  Francisco ", unicode::is_punctuation, unicode::inner_blanks::drop) ==
        "sanfrancisco");
}

TEST_CASE("unicode text: match keys ignore case, accents, width and punctuation") {
  CHECK(unicode::match_key("Côte d’Ivoire") == "cotedivoire");
  CHECK(unicode::match_key("COTE D'IVOIRE") == "cotedivoire");
  CHECK(unicode::match_key("Baden-Württemberg") == "badenwurttemberg");
  CHECK(unicode::match_key("Đà Nẵng") == "danang");
  CHECK(unicode::match_key("Łódź") == "lodz");
  CHECK(unicode::match_key("İSTANBUL") == "istanbul");
  CHECK(unicode::match_key("ＵＳＡ") == "usa");
  CHECK(unicode::match_key("U.S.") == "us");
  CHECK(unicode::match_key("Straße") == "strasse");
  CHECK(unicode::match_key("...") == "");
}

TEST_CASE("unicode text: ASCII folds without ICU exactly as ICU's transliteration folds it") {
  std::string every_ascii;
  for (int c = 1; c < 0x80; ++c) every_ascii.push_back(static_cast<char>(c));
  CHECK(unicode::match_key(every_ascii) == unicode::fold_for_match(every_ascii));
  CHECK(unicode::match_key(every_ascii) == "0123456789abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
  for (const char* text : {"United States", "U.S.A.", "  Baden - Wurttemberg ", "Cote d'Ivoire", "St. John's", "",
                           "IL-TA", "x_y+z$1", "Tab\tNew\nLine"}) {
    CAPTURE(text);
    CHECK(unicode::match_key(text) == unicode::fold_for_match(text));
  }
  // Text that is not ASCII takes ICU's path, whole.
  CHECK(unicode::match_key("Côte d'Ivoire") == unicode::fold_for_match("Côte d'Ivoire"));
}

}  // namespace unicode_text_test

#include "providers/user_data.hpp"

#include <doctest/doctest.h>

#include <string>

#include "providers/crypto.hpp"

using namespace outbox::providers;

TEST_CASE("hash vectors from the provider facts (design/providers.md)") {
  // Meta
  CHECK(hash_pii(pii_field::email, "john_smith@gmail.com") ==
        "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f");
  CHECK(hash_pii(pii_field::phone_digits, "16505551212") ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::name, "mary") == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");
  CHECK(hash_pii(pii_field::country, "us") == "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  // TikTok
  CHECK(hash_pii(pii_field::email, " ALICE_abc@gmail.com ") ==
        "848a771458438fc2ec420560d769fb9b9b86851ee338ec56517baabd79d3bb4f");
  CHECK(hash_pii(pii_field::phone_e164, "+12133734253") ==
        "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
  CHECK(hash_pii(pii_field::external_id, "user_123") ==
        "80fba0ae1c48e3978e43e4efc365e14e12ea0c830ba8ba5b9a2dafc7e3f2ab8b");
  // Google
  CHECK(hash_pii(pii_field::email_google, "cloudy.sanfrancisco+shopping@gmail.com") ==
        "223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4");
}

TEST_CASE("the same vectors reached from messier input") {
  CHECK(hash_pii(pii_field::email, "  John_Smith@GMAIL.com\t") ==
        "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f");
  CHECK(hash_pii(pii_field::phone_digits, "+1 (650) 555-1212") ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::phone_digits, "001.650.555.1212") ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::phone_digits, "(650) 555-1212", {"1"}) ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::name, " Mary ") == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");
  CHECK(hash_pii(pii_field::name, "MARY.") == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");
  CHECK(hash_pii(pii_field::country, " US ") == "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  CHECK(hash_pii(pii_field::country, "U.S.") == "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  CHECK(hash_pii(pii_field::phone_e164, "213-373-4253", {"+1"}) ==
        "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
}

TEST_CASE("pre-hashed values pass through, lower-cased") {
  const std::string upper = "62A14E44F765419D10FEA99367361A727C12365E2520F32218D505ED9AA0F62F";
  for (const auto field : {pii_field::email, pii_field::email_google, pii_field::phone_digits, pii_field::phone_e164,
                           pii_field::name, pii_field::city, pii_field::state, pii_field::zip, pii_field::country,
                           pii_field::date_of_birth, pii_field::external_id}) {
    CHECK(hash_pii(field, " " + upper + " ") == "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f");
  }
  CHECK(is_sha256_hex(upper));
  CHECK_FALSE(is_sha256_hex(upper.substr(1)));
  CHECK_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
  // 63 hex characters are not a hash: they get hashed.
  CHECK(hash_pii(pii_field::external_id, upper.substr(1)) == sha256_hex(upper.substr(1)));
}

TEST_CASE("unusable values give nullopt") {
  CHECK_FALSE(hash_pii(pii_field::email, "   "));
  CHECK_FALSE(hash_pii(pii_field::name, "..."));
  CHECK_FALSE(hash_pii(pii_field::phone_e164, "call me"));
  CHECK_FALSE(hash_pii(pii_field::country, "USA"));
  CHECK_FALSE(hash_pii(pii_field::date_of_birth, "26/05/1990"));
  CHECK_FALSE(normalize_pii(pii_field::city, " - "));
}

TEST_CASE("email") {
  CHECK(normalize_email(" Foo.Bar+tag@Example.COM ") == "foo.bar+tag@example.com");
  CHECK(normalize_email("ÉLODIE@exemple.fr") == "élodie@exemple.fr");
}

TEST_CASE("email, Google variant: gmail.com and googlemail.com only") {
  CHECK(normalize_email_google("Cloudy.SanFrancisco+shopping@gmail.com") == "cloudysanfrancisco@gmail.com");
  CHECK(normalize_email_google("j.o.h.n+a+b@googlemail.com") == "john@googlemail.com");
  CHECK(normalize_email_google(" Jane.Doe+x@GMail.com ") == "janedoe@gmail.com");
  // Other domains keep dots and plus tags, even look-alikes.
  CHECK(normalize_email_google("jane.doe+x@example.com") == "jane.doe+x@example.com");
  CHECK(normalize_email_google("jane.doe+x@gmail.com.evil.io") == "jane.doe+x@gmail.com.evil.io");
  CHECK(normalize_email_google("jane.doe+x@mail.gmail.com") == "jane.doe+x@mail.gmail.com");
  CHECK(normalize_email_google("no-at-sign") == "no-at-sign");
}

TEST_CASE("phone: Meta digits style") {
  const auto meta = [](std::string_view raw, std::string_view code = {}) {
    return normalize_phone(raw, phone_style::digits, code);
  };
  CHECK(meta("+1 650-555-1212") == "16505551212");
  CHECK(meta("+44 (0)20 7946 0958") == "442079460958");  // "(0)" is the trunk zero, not part of the number
  CHECK(meta("0044 20 7946 0958") == "442079460958");
  CHECK(meta("+33 6 12 34 56 78") == "33612345678");
  CHECK(meta("16505551212") == "16505551212");         // no default code: taken as already international
  CHECK(meta("6505551212", "1") == "16505551212");      // national number gets the default code
  CHECK(meta("16505551212", "1") == "16505551212");     // already carries it
  CHECK(meta("07700 900123", "44") == "447700900123");  // trunk zero dropped
  CHECK(meta("447700900123", "+44") == "447700900123");
  CHECK(meta("0612345678", "33") == "33612345678");
  CHECK(meta("650.555.1212", "1") == "16505551212");
  CHECK(meta("+1 650 555 1212 ext. 7") == std::nullopt);  // letters left
  CHECK(meta("12345") == std::nullopt);                   // too short
  CHECK(meta("+1234567890123456") == std::nullopt);       // more than 15 digits
  CHECK(meta("") == std::nullopt);
  CHECK(meta("6505551212", "0") == "6505551212");  // an invalid default code is ignored
}

TEST_CASE("phone: E.164 style (TikTok, Google)") {
  const auto e164 = [](std::string_view raw, std::string_view code = {}) {
    return normalize_phone(raw, phone_style::e164, code);
  };
  CHECK(e164("+1 (213) 373-4253") == "+12133734253");
  CHECK(e164("0012133734253") == "+12133734253");
  CHECK(e164("2133734253", "1") == "+12133734253");
  CHECK(e164("12133734253") == "+12133734253");
  CHECK(e164("030 123456", "49") == "+4930123456");
  CHECK(e164("+49 (0) 30 123456") == "+4930123456");
  CHECK(e164("0049 (0)30 123456") == "+4930123456");
}

TEST_CASE("names: lower-case, punctuation removed, UTF-8 aware") {
  CHECK(normalize_name("  Mary-Jane  ") == "maryjane");
  CHECK(normalize_name("O'Brien") == "obrien");
  CHECK(normalize_name("Jean  Luc") == "jean luc");
  CHECK(normalize_name("ÉLODIE") == "élodie");
  CHECK(normalize_name("ÀÉÎÕÜÇÑØÞ") == "àéîõüçñøþ");
  CHECK(normalize_name("Łukasz Żółć") == "łukasz żółć");
  CHECK(normalize_name("ΑΘΗΝΑ") == "αθηνα");
  CHECK(normalize_name("ДМИТРИЙ Ёлкин") == "дмитрий ёлкин");
  CHECK(normalize_name("Zoë «la» d’Arc") == "zoë la darc");
  CHECK(normalize_name("Straße") == "straße");
  CHECK(normalize_name("Ÿves") == "ÿves");
  CHECK(utf8_to_lower("A×B") == "a×b");  // × is not a letter
  CHECK(utf8_to_lower("bad \xff byte") == "bad \xff byte");
  CHECK(hash_pii(pii_field::name, "Élodie") == sha256_hex("élodie"));
}

TEST_CASE("city, state, zip, country, date of birth, external id") {
  CHECK(normalize_city("San Francisco") == "sanfrancisco");
  CHECK(normalize_city(" St. Louis ") == "stlouis");
  CHECK(normalize_city("Zürich") == "zürich");
  CHECK(normalize_state("CA") == "ca");
  CHECK(normalize_state("N.Y.") == "ny");
  CHECK(normalize_zip("94025") == "94025");
  CHECK(normalize_zip("94025-1234") == "94025");
  CHECK(normalize_zip("94025 1234") == "94025");
  CHECK(normalize_zip("940251234") == "94025");
  CHECK(normalize_zip("SW1A 1AA") == "sw1a1aa");
  CHECK(normalize_zip("75-001") == "75001");
  CHECK(normalize_zip(" 1234 AB ") == "1234ab");
  CHECK(normalize_country("GB") == "gb");
  CHECK(normalize_country("gbr") == std::nullopt);
  CHECK(normalize_country("1x") == std::nullopt);
  CHECK(normalize_date_of_birth("1990-05-26") == "19900526");
  CHECK(normalize_date_of_birth("19900526") == "19900526");
  CHECK(normalize_date_of_birth("1990-13-01") == std::nullopt);
  CHECK(normalize_date_of_birth("1990-02-30") == std::nullopt);
  CHECK(normalize_external_id("  CRM-42 ") == "CRM-42");  // case kept: ids are opaque
  CHECK(hash_pii(pii_field::date_of_birth, "1990-05-26") == sha256_hex("19900526"));
  CHECK(hash_pii(pii_field::zip, "94025-1234") == sha256_hex("94025"));
  CHECK(hash_pii(pii_field::city, "Menlo Park") == sha256_hex("menlopark"));
}

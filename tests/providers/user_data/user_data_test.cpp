#include "providers/user_data/user_data.hpp"

#include <doctest/doctest.h>

#include <string>

#include "providers/crypto.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace user_data_test {

using namespace outbox::providers;

// Expected hashes in this file were computed apart from this code, with
// Python: hashlib.sha256(raw.lower().encode()).hexdigest() (Python's str.lower
// is Unicode's full default mapping, as JavaScript's toLowerCase, for every
// string used here, İ and final sigma included).

TEST_CASE("user data: hash vectors from the provider facts (design/providers.md)") {
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

TEST_CASE("user data: the same vectors reached from messier input") {
  CHECK(hash_pii(pii_field::email, "  John_Smith@GMAIL.com\t") ==
        "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f");
  CHECK(hash_pii(pii_field::phone_digits, "+1 (650) 555-1212") ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::phone_digits, "001.650.555.1212") ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::phone_digits, "(650) 555-1212", {"1"}) ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::phone_digits, "(650) 555-1212", {"", "us"}) ==
        "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(hash_pii(pii_field::name, " Mary ") == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");
  CHECK(hash_pii(pii_field::name, "MARY.") == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");
  CHECK(hash_pii(pii_field::country, " US ") == "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  CHECK(hash_pii(pii_field::country, "U.S.") == "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  CHECK(hash_pii(pii_field::country, "United States") ==
        "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  CHECK(hash_pii(pii_field::phone_e164, "213-373-4253", {"+1"}) ==
        "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
}

TEST_CASE("user data: hashes of non-ASCII names match JavaScript's toLowerCase") {
  CHECK(hash_pii(pii_field::name, "NGUYỄN") == "828b95a54a436bf4427d64fd9afe64ecf25d6c78ffabc3b64026d0a59ae8ab75");
  CHECK(hash_pii(pii_field::name, "ĐẶNG") == "cfd661fb3e37c91070a8445d3890d5c779fcb43bdf086493c88e9a8f68061153");
  CHECK(hash_pii(pii_field::name, "ΣΟΦΙΑΣ") == "8bdcbd42c265017b2748fd8d539b390e44a3dbde8f66cec8df2c11af65c07762");
  CHECK(hash_pii(pii_field::city, "İSTANBUL") == "4a4df120f7d1f3c286f58651abfcec2aade892ace635f96f02b946c96e6e1f86");
  CHECK(hash_pii(pii_field::name, "IŞIK") == "ae26003ef869e414e042a8123353fd67d48c9785ca3e6d6e7ac9ea6f0d57f1b1");
  CHECK(hash_pii(pii_field::name, "ẞ") == "cd3a7e92a9114307055e4a0583acd6549ec3bb6d7c10ecc6ce11ae3d76b3d7db");
  CHECK(hash_pii(pii_field::name, "ＡＢＣ") == "e88480e11a7c11593c1526375c9d6623d043a2b78ed919648c1afcf16ae86ddd");
}

TEST_CASE("user data: pre-hashed values pass through, lower-cased, never hashed twice") {
  const std::string upper = "62A14E44F765419D10FEA99367361A727C12365E2520F32218D505ED9AA0F62F";
  const std::string lower = "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f";
  for (const auto field : {pii_field::email, pii_field::email_google, pii_field::phone_digits, pii_field::phone_e164,
                           pii_field::name, pii_field::given_name_google, pii_field::family_name_google,
                           pii_field::city, pii_field::state, pii_field::zip, pii_field::postal_code_google,
                           pii_field::country, pii_field::date_of_birth, pii_field::external_id, pii_field::gender}) {
    CAPTURE(static_cast<int>(field));
    CHECK(hash_pii(field, " " + upper + " ") == lower);
    const auto r = hash_field(field, lower, {"1", "us"});
    CHECK(r.value == lower);
    CHECK(hash_field(field, *r.value).value == lower);  // a second pass changes nothing
  }
  CHECK(is_sha256_hex(upper));
  CHECK_FALSE(is_sha256_hex(upper.substr(1)));
  CHECK_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
  // 63 hex characters are not a hash: they get hashed (external_id lower-cased first).
  CHECK(hash_pii(pii_field::external_id, upper.substr(1)) == sha256_hex(lower.substr(1)));
}

TEST_CASE("user data: unusable values give a reason and a detail without the value") {
  const auto expect = [](pii_field field, std::string_view raw, std::string_view reason) {
    CAPTURE(raw);
    const auto r = normalize_field(field, raw, {"", "fr"});
    CHECK_FALSE(r.ok());
    CHECK(r.reason == reason);
    CHECK_FALSE(r.detail.empty());
    CHECK(r.detail.find(raw) == std::string::npos);
    CHECK_FALSE(hash_field(field, raw, {"", "fr"}).ok());
  };
  expect(pii_field::email, "   ", "empty");
  expect(pii_field::name, "...", "empty");
  expect(pii_field::city, " - ", "empty");
  expect(pii_field::email, "no-at-sign", "invalid_email");
  expect(pii_field::email, "a@b@c.com", "invalid_email");
  expect(pii_field::email, "@example.com", "invalid_email");
  expect(pii_field::email_google, "jane@", "invalid_email");
  expect(pii_field::phone_e164, "call me", "invalid_phone");
  expect(pii_field::phone_e164, "0612", "invalid_phone");
  expect(pii_field::country, "Narnia", "unknown_country");
  expect(pii_field::date_of_birth, "26/05/1990", "invalid_date");
  expect(pii_field::gender, "x", "invalid_gender");
  CHECK_FALSE(normalize_pii(pii_field::city, " - "));
  CHECK(normalize_field(pii_field::phone_e164, "0612", {"", "fr"}).detail ==
        "not a possible phone number for region FR (too short)");
}

TEST_CASE("user data: email") {
  CHECK(normalize_email(" Foo.Bar+tag@Example.COM ") == "foo.bar+tag@example.com");
  CHECK(normalize_email("ÉLODIE@exemple.fr") == "élodie@exemple.fr");
  CHECK(normalize_field(pii_field::email, " Foo@Example.COM ").value == "foo@example.com");
  CHECK(normalize_field(pii_field::email, "ĐẶNG@example.vn").value == "đặng@example.vn");
}

TEST_CASE("user data: email, Google variant: blanks removed; gmail.com and googlemail.com rules") {
  CHECK(normalize_email_google("Cloudy.SanFrancisco+shopping@gmail.com") == "cloudysanfrancisco@gmail.com");
  CHECK(normalize_email_google("j.o.h.n+a+b@googlemail.com") == "john@googlemail.com");
  CHECK(normalize_email_google(" Jane.Doe+x@GMail.com ") == "janedoe@gmail.com");
  CHECK(normalize_email_google("Jane Doe @ example.com") == "janedoe@example.com");
  // Other domains keep dots and plus tags, even look-alikes.
  CHECK(normalize_email_google("jane.doe+x@example.com") == "jane.doe+x@example.com");
  CHECK(normalize_email_google("jane.doe+x@gmail.com.evil.io") == "jane.doe+x@gmail.com.evil.io");
  CHECK(normalize_email_google("jane.doe+x@mail.gmail.com") == "jane.doe+x@mail.gmail.com");
  CHECK(normalize_email_google("no-at-sign") == "no-at-sign");
}

TEST_CASE("user data: names: lower-case, punctuation removed, inner blanks collapsed") {
  CHECK(normalize_name("  Mary-Jane  ") == "maryjane");
  CHECK(normalize_name("O'Brien") == "obrien");
  CHECK(normalize_name("Jean  Luc") == "jean luc");
  CHECK(normalize_name("Jean - Luc") == "jean luc");
  CHECK(normalize_name("ÉLODIE") == "élodie");
  CHECK(normalize_name("ÀÉÎÕÜÇÑØÞ") == "àéîõüçñøþ");
  CHECK(normalize_name("Łukasz Żółć") == "łukasz żółć");
  CHECK(normalize_name("ΑΘΗΝΑ") == "αθηνα");
  CHECK(normalize_name("ДМИТРИЙ Ёлкин") == "дмитрий ёлкин");
  CHECK(normalize_name("Zoë «la» d’Arc") == "zoë la darc");
  CHECK(normalize_name("Straße") == "straße");
  CHECK(normalize_name("Ÿves") == "ÿves");
  CHECK(normalize_name("A$B+C_D") == "abcd");  // ASCII symbols go, as they always did
  CHECK(normalize_name("Ann\u00a0\u200bLee") == "ann lee");
  CHECK(hash_pii(pii_field::name, "Élodie") == sha256_hex("élodie"));
}

TEST_CASE("user data: Unicode case mapping as JavaScript's toLowerCase (root locale)") {
  CHECK(normalize_name("NGUYỄN") == "nguyễn");
  CHECK(normalize_name("ĐẶNG") == "đặng");
  CHECK(normalize_name("ΣΟΦΙΑΣ") == "σοφιας");             // final sigma
  CHECK(normalize_name("ΣΟΦΙΑΣ-ΜΑΡΙΑ") == "σοφιαςμαρια");  // lower-cased before the '-' goes
  CHECK(normalize_name("İSTANBUL") == "i\u0307stanbul");   // İ -> i + combining dot above
  CHECK(normalize_name("IŞIK") == "işik");                 // I -> i: no Turkish rule
  CHECK(normalize_name("ılık") == "ılık");                 // dotless ı stays
  CHECK(normalize_name("ẞ") == "ß");
  CHECK(normalize_name("STRASSE") == "strasse");
  CHECK(normalize_name("ＡＢＣ") == "ａｂｃ");  // fullwidth stays fullwidth, as in JavaScript
  CHECK(utf8_to_lower("A×B") == "a×b");         // × is not a letter
  CHECK(utf8_to_lower("bad \xff byte") == "bad \uFFFD byte");
}

TEST_CASE("user data: city, state, zip, external id") {
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
  // Meta's Parameter Builder trims and lower-cases external_id: the same here, for every provider.
  CHECK(normalize_external_id("  CRM-42 ") == "crm-42");
  CHECK(normalize_external_id("ÜSER_Ä1") == "üser_ä1");
  CHECK(hash_pii(pii_field::zip, "94025-1234") == sha256_hex("94025"));
  CHECK(hash_pii(pii_field::city, "Menlo Park") == sha256_hex("menlopark"));
}

TEST_CASE("user data: date of birth, every accepted form") {
  CHECK(normalize_date_of_birth("1990-05-26") == "19900526");
  CHECK(normalize_date_of_birth("19900526") == "19900526");
  CHECK(normalize_date_of_birth("05/26/1990") == "19900526");
  CHECK(normalize_date_of_birth("5/26/1990") == "19900526");
  CHECK(normalize_date_of_birth("2/6/1997") == "19970206");
  CHECK(normalize_date_of_birth(" 2/16/1997 ") == "19970216");
  CHECK(normalize_date_of_birth("1900-01-01") == "19000101");
  CHECK(normalize_date_of_birth("2000-02-29") == "20000229");
  CHECK(hash_pii(pii_field::date_of_birth, "2/16/1997") ==
        "01acdbf6ec7b4f478a225f1a246e5d6767eeab1a7ffa17f025265b5b94f40f0c");
  CHECK(hash_pii(pii_field::date_of_birth, "1990-05-26") ==
        "d0cf9433a50859f0877a584f19306277aef4081821376a37fc7ade354fdcc189");
}

TEST_CASE("user data: date of birth, rejected forms and dates") {
  const auto detail = [](std::string_view raw) {
    const auto r = normalize_field(pii_field::date_of_birth, raw);
    CHECK(r.reason == "invalid_date");
    return r.ok() ? std::string{"accepted"} : r.detail;
  };
  const std::string formats = "not in a documented format (YYYYMMDD, YYYY-MM-DD, MM/DD/YYYY)";
  CHECK(detail("1990-02-30") == "impossible date (no such day in that month)");
  CHECK(detail("1990-04-31") == "impossible date (no such day in that month)");
  CHECK(detail("1900-02-29") == "impossible date (no such day in that month)");
  CHECK(detail("02/30/1990") == "impossible date (no such day in that month)");
  CHECK(detail("1990-13-01") == "impossible date (no such month)");
  CHECK(detail("19901301") == "impossible date (no such month)");
  CHECK(detail("31/01/1990") == formats);  // day first: not MM/DD/YYYY
  CHECK(detail("01.02.1990") == formats);
  CHECK(detail("1990/05/26") == formats);
  CHECK(detail("05/26/90") == formats);
  CHECK(detail("May 26, 1990") == formats);
  CHECK(detail("1990-5-26") == formats);
  CHECK(detail("199005261") == formats);
  CHECK(detail("1899-12-31") == "a year before 1900");
  CHECK(detail("2999-01-01") == "a date in the future");
  // "Today" is the caller's (the providers pass the engine's clock): the day itself is accepted.
  using std::chrono::sys_days;
  const sys_days today{std::chrono::year{2026} / 12 / 7};
  CHECK(normalize_date_of_birth("2026-12-07", today) == "20261207");
  CHECK_FALSE(normalize_date_of_birth("2026-12-08", today).has_value());
  normalize_options options;
  options.today = today - std::chrono::days{1};
  CHECK(normalize_field(pii_field::date_of_birth, "2026-12-07", options).detail == "a date in the future");
  CHECK(detail("0000-00-00") == "impossible date (no such month)");
}

TEST_CASE("user data: gender") {
  for (const auto* f : {"f", "F", "female", " Female ", "FEMALE", "F."}) {
    CHECK(normalize_field(pii_field::gender, f).value == "f");
  }
  for (const auto* m : {"m", "M", "male", "\tMale\n", "MALE"}) {
    CHECK(normalize_field(pii_field::gender, m).value == "m");
  }
  for (const auto* other : {"x", "fem", "woman", "f m", "0"}) {
    CAPTURE(other);
    CHECK(normalize_field(pii_field::gender, other).reason == "invalid_gender");
  }
  CHECK(normalize_field(pii_field::gender, "  ").reason == "empty");
  CHECK(hash_pii(pii_field::gender, "Female") == "252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111");
  CHECK(hash_pii(pii_field::gender, "M") == "62c66a7a5dd70c3146618063c344e531e6d4b59e379808443ce962b3abd63c5a");
}

TEST_CASE("user data: Google's names: titles and suffixes left out, inner blanks kept, punctuation removed") {
  CHECK(normalize_given_name_google("  Mrs. Mary ") == "mary");
  CHECK(normalize_given_name_google("DR. MRS. Mary Ann") == "mary ann");
  CHECK(normalize_given_name_google("Mary   Ann") == "mary   ann");
  CHECK(normalize_given_name_google("Miss") == "miss");         // only a title: kept, nothing else to match on
  CHECK(normalize_given_name_google("Mrsmary") == "mrsmary");   // a title only as a whole word
  CHECK(normalize_given_name_google("Jr. Mary") == "jr mary");  // suffixes belong to the family name
  CHECK(normalize_family_name_google("Smith Jr.") == "smith");
  CHECK(normalize_family_name_google("Smith, III, Ph.D.") == "smith");
  CHECK(normalize_family_name_google("van der Berg") == "van der berg");
  CHECK(normalize_family_name_google("Jr.") == "jr");
  CHECK(normalize_family_name_google("Mr. Smith") == "mr smith");  // prefixes belong to the given name
  CHECK(hash_pii(pii_field::given_name_google, "Mrs. Mary") ==
        "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");  // sha256("mary")
  // Meta's and TikTok's rule is unchanged: titles are kept, inner blanks collapsed.
  CHECK(normalize_name("Mrs. Mary   Ann") == "mrs mary ann");
}

TEST_CASE("user data: Google's postal code is trimmed only; Meta's zip rule stays") {
  CHECK(normalize_postal_code_google("  SW1A 1AA ") == "SW1A 1AA");
  CHECK(normalize_postal_code_google("94043-1351") == "94043-1351");
  CHECK(normalize_field(pii_field::postal_code_google, "   ").reason == "empty");
  CHECK(normalize_zip("  SW1A 1AA ") == "sw1a1aa");
}

TEST_CASE("user data: Meta Parameter Builder hashes pass through, with the appendix only where kept") {
  const std::string hex = "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f";
  normalize_options meta;
  meta.keep_hash_appendix = true;
  CHECK(hash_pii(pii_field::email, hex + ".AQYBAQIA", meta) == hex + ".AQYBAQIA");
  CHECK(hash_pii(pii_field::email, " " + hex + ".AQYBAQIA ", meta) == hex + ".AQYBAQIA");
  CHECK(hash_pii(pii_field::email_google, hex + ".AQYBAQIA") == hex);  // TikTok, Google: the hash alone
  CHECK(hash_pii(pii_field::external_id, hex + ".AQYBAQIA") == hex);
  // Not a Parameter Builder value: hashed as text.
  CHECK(hash_pii(pii_field::external_id, hex + ".", meta) == sha256_hex(hex + "."));
  CHECK(hash_pii(pii_field::external_id, hex + ".a b", meta) == sha256_hex(hex + ".a b"));
  CHECK(hash_pii(pii_field::external_id, hex.substr(1) + "x.AQYBAQIA", meta) ==
        sha256_hex(hex.substr(1) + "x.aqybaqia"));
}

}  // namespace user_data_test

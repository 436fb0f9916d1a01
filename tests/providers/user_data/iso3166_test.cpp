#include "providers/user_data/iso3166.hpp"
#include "providers/user_data/iso3166_keys.hpp"

#include <doctest/doctest.h>

#include <string>

#include "providers/user_data/user_data.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace iso3166_test {

using namespace outbox::providers;

TEST_CASE("iso3166: the tables generated from iso-codes are complete") {
  CHECK(iso3166::countries().size() >= 249);
  CHECK(iso3166::subdivisions().size() >= 5000);
  CHECK_FALSE(iso3166::data_version().empty());
  bool us = false;
  for (const auto& c : iso3166::countries()) {
    if (c.alpha2 != "US") continue;
    us = c.alpha3 == "USA" && c.name == "United States" && c.official_name == "United States of America";
  }
  CHECK(us);
}

TEST_CASE("iso3166: countries by code, name, official name, common name and alias") {
  const auto country = [](std::string_view raw) { return normalize_pii(pii_field::country, raw).value_or("none"); };
  CHECK(country("US") == "us");
  CHECK(country("us") == "us");
  CHECK(country("USA") == "us");
  CHECK(country("U.S.") == "us");
  CHECK(country("U.S.A.") == "us");
  CHECK(country("United States") == "us");
  CHECK(country("united states of america") == "us");
  CHECK(country("  UNITED  STATES ") == "us");
  CHECK(country("gbr") == "gb");
  CHECK(country("United Kingdom") == "gb");
  CHECK(country("Germany") == "de");
  CHECK(country("DEU") == "de");
  CHECK(country("Côte d’Ivoire") == "ci");
  CHECK(country("COTE D'IVOIRE") == "ci");  // accents and punctuation do not matter
  CHECK(country("Türkiye") == "tr");
  CHECK(country("Viet Nam") == "vn");
  CHECK(country("Vietnam") == "vn");      // common_name
  CHECK(country("South Korea") == "kr");  // common_name
  CHECK(country("Korea, Republic of") == "kr");
  CHECK(country("Czech Republic") == "cz");  // official_name
  CHECK(country("ＵＳ") == "us");            // fullwidth
}

TEST_CASE("iso3166: the documented aliases") {
  for (const auto* uk : {"UK", "uk", "Great Britain", "Britain", "England", "Scotland", "Wales", "Northern Ireland"}) {
    CAPTURE(uk);
    CHECK(normalize_pii(pii_field::country, uk) == "gb");
  }
  CHECK(normalize_pii(pii_field::country, "Russia") == "ru");
  CHECK(normalize_pii(pii_field::country, "Turkey") == "tr");
  CHECK(normalize_pii(pii_field::country, "Ivory Coast") == "ci");
  CHECK(normalize_pii(pii_field::country, "Holland") == "nl");
  for (const auto& alias : iso3166::country_aliases()) {
    CAPTURE(alias.name);
    bool known = false;
    for (const auto& c : iso3166::countries()) known = known || c.alpha2 == alias.alpha2;
    CHECK(known);
  }
  CHECK(hash_pii(pii_field::country, "UK") == "0b407281768f0e833afef47ed464b6571d01ca4d53c12ce5c51d1462f4ad6677");
}

TEST_CASE("iso3166: unknown countries are left out") {
  for (const auto* raw : {"Narnia", "1x", "Deutschland", "Korea", "America", "XX", "-"}) {
    CAPTURE(raw);
    const auto r = normalize_field(pii_field::country, raw);
    CHECK_FALSE(r.ok());
    CHECK(r.reason == "unknown_country");
  }
  CHECK(normalize_field(pii_field::country, " ").reason == "empty");
}

TEST_CASE("iso3166: subdivisions by name, code part or full code") {
  using iso3166::subdivision_code;
  CHECK(subdivision_code("us", "California") == "ca");
  CHECK(subdivision_code("us", "CALIFORNIA") == "ca");
  CHECK(subdivision_code("us", "US-CA") == "ca");
  CHECK(subdivision_code("de", "Bayern") == "by");
  CHECK(subdivision_code("de", "Baden-Wurttemberg") == "bw");
  CHECK(subdivision_code("gb", "England") == "eng");
  CHECK(subdivision_code("es", "Gerona") == "gi");  // the second name of "Girona [Gerona]"
  CHECK(subdivision_code("bg", "Sofia (stolitsa)") == "22");
  CHECK(subdivision_code("bg", "Sofia") == "23");  // a subdivision's own name beats a part of another's
  CHECK(subdivision_code("bd", "Dhaka") == "c");   // the division, not its district of the same name
  CHECK(iso3166::subdivision_name("de", "BY") == "Bayern");
  CHECK(iso3166::subdivision_name("es", "Gerona") == "Girona");
}

TEST_CASE("iso3166: states as Meta documents them: US code, elsewhere the name") {
  const auto state = [](std::string_view raw, std::string_view country) {
    return normalize_pii(pii_field::state, raw, {"", std::string{country}}).value_or("none");
  };
  CHECK(state("California", "us") == "ca");
  CHECK(state("CA", "us") == "ca");
  CHECK(state("US-CA", "us") == "ca");
  CHECK(state("New York", "us") == "ny");
  CHECK(state("N.Y.", "us") == "ny");
  CHECK(state("District of Columbia", "us") == "dc");
  CHECK(state("Bayern", "de") == "bayern");
  CHECK(state("BY", "de") == "bayern");  // a code outside the US becomes the name Meta matches
  CHECK(state("DE-BY", "de") == "bayern");
  CHECK(state("Baden-Wurttemberg", "de") == "badenwürttemberg");  // the data's spelling
  CHECK(state("England", "gb") == "england");
  CHECK(state("Gerona", "es") == "girona");
  CHECK(hash_pii(pii_field::state, "California", {"", "us"}) ==
        "6959097001d10501ac7d54c0bdb8db61420f658f2922cc26e46d536119a31126");
  CHECK(hash_pii(pii_field::state, "BY", {"", "de"}) ==
        "52b07f18c831ba4b08ba0b8bc84c6e023a825dfd385d20d8dcbf410d11c546e7");  // sha256("bayern")
}

TEST_CASE("iso3166: states without a country, or not found, are normalized as before") {
  const auto state = [](std::string_view raw, std::string_view country) {
    return normalize_pii(pii_field::state, raw, {"", std::string{country}}).value_or("none");
  };
  CHECK(state("California", "") == "california");
  CHECK(state("Bayern", "us") == "bayern");
  CHECK(state("Bayern", "") == "bayern");
  CHECK(state("Nowhere Land", "de") == "nowhereland");
  CHECK(state("N.Y.", "") == "ny");
  CHECK(state("Île-de-France", "zz") == "îledefrance");
  CHECK(iso3166::subdivision_code("usa", "California") == std::nullopt);
  CHECK(iso3166::subdivision_code("US", "California") == "ca");
}

TEST_CASE("iso3166: the indexes made at build time are sorted, unique, and find every code and ASCII name") {
  using iso3166::key_table;
  for (const key_table& table : {iso3166::country_keys(), iso3166::subdivision_keys(), iso3166::subdivision_names()}) {
    REQUIRE(table.rows.size() > 200);
    for (std::size_t i = 1; i < table.rows.size(); ++i) {
      CAPTURE(table.key(table.rows[i]));
      CHECK(table.key(table.rows[i - 1]) < table.key(table.rows[i]));  // binary search relies on it
      CHECK_FALSE(table.value(table.rows[i]).empty());
    }
  }
  CHECK(iso3166::subdivision_keys().rows.size() >= iso3166::subdivisions().size());
  CHECK(iso3166::subdivision_names().rows.size() == iso3166::subdivisions().size());
  const auto lower = [](std::string_view s) {
    std::string out{s};
    for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return out;
  };
  for (const auto& c : iso3166::countries()) {
    CAPTURE(c.alpha2);
    CHECK(iso3166::country_code(c.alpha2) == lower(c.alpha2));
    CHECK(iso3166::country_code(c.alpha3) == lower(c.alpha2));
  }
  for (const auto& s : iso3166::subdivisions()) {
    CAPTURE(s.code);
    CHECK(iso3166::subdivision_code(s.code.substr(0, 2), s.code) == lower(s.code.substr(3)));
  }
  CHECK(iso3166::country_keys().find("unitedstates") == "us");
  CHECK_FALSE(iso3166::country_keys().find("unitedstate").has_value());
  CHECK_FALSE(iso3166::country_keys().find("").has_value());
  CHECK(iso3166::subdivision_names().find("de-by") == "Bayern");
}

}  // namespace iso3166_test

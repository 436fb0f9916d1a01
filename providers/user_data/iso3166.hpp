#pragma once
// ISO 3166 countries (part 1) and their subdivisions (part 2), from Debian's
// iso-codes package, compiled into the binary: CMake runs scripts/gen_iso3166.py
// on /usr/share/iso-codes/json at build time (build/generated/iso3166_data.cpp),
// so nothing is read at run time. Lookups are case- and accent-insensitive
// (unicode::match_key), in indexes also made at build time (iso3166_keys.hpp).
// See docs/normalization.md.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace outbox::providers::iso3166 {

// One row of iso_3166-1.json; a field the data lacks is empty.
struct country_entry {
  std::string_view alpha2;         // "US"
  std::string_view alpha3;         // "USA"
  std::string_view name;           // "United States"
  std::string_view official_name;  // "United States of America"
  std::string_view common_name;    // "Bolivia" (for "Bolivia, Plurinational State of")
};

// One row of iso_3166-2.json.
struct subdivision_entry {
  std::string_view code;    // "US-CA"
  std::string_view name;    // "California"; some carry a second name: "Girona [Gerona]"
  std::string_view parent;  // "GB-ENG" for an English county; empty for a top-level subdivision
};

// A country name CRMs use that the data lacks ("UK"), with its alpha-2.
struct country_alias {
  std::string_view name;
  std::string_view alpha2;
};

// The generated tables, in the data's order, and the iso-codes version they come from.
[[nodiscard]] std::span<const country_entry> countries();
[[nodiscard]] std::span<const subdivision_entry> subdivisions();
[[nodiscard]] std::string_view data_version();

// The hand-kept aliases (docs/normalization.md lists them; iso3166_aliases.cpp).
[[nodiscard]] std::span<const country_alias> country_aliases();

// Lower-case alpha-2 of a country written as its alpha-2, alpha-3, name,
// official name, common name or an alias: "United States", "USA", "U.S.", "UK"
// -> "us", "us", "us", "gb". nullopt when nothing matches.
[[nodiscard]] std::optional<std::string> country_code(std::string_view raw);

// Lower-case code part of a subdivision of `alpha2` (either case) written as
// its name, its code part or its full code: ("us", "California"), ("us", "CA"),
// ("us", "US-CA") -> "ca"; ("de", "Bayern") -> "by". A name shared by several
// subdivisions of one country means the top-level one. nullopt when unknown.
[[nodiscard]] std::optional<std::string> subdivision_code(std::string_view alpha2, std::string_view raw);

// The data's name of that subdivision: ("de", "BY") and ("de", "bayern") ->
// "Bayern"; a name with a second one gives the first ("Girona [Gerona]" -> "Girona").
[[nodiscard]] std::optional<std::string> subdivision_name(std::string_view alpha2, std::string_view raw);

}  // namespace outbox::providers::iso3166

#pragma once
// The ISO 3166 look-up indexes, generated at build time by
// scripts/gen_iso3166_keys.cpp from the iso-codes tables (iso3166.hpp) with the
// same folding as at run time (unicode::match_key). The dispatcher builds no
// index at start and never folds the data's names itself: it folds only the
// text a CRM sends, and ASCII text without ICU's transliterator.
//
// Offsets into one text block rather than pointers: a table of pointers in a
// position-independent executable is relocated at load, which writes (and keeps
// resident) every page of it in every process, batching or not.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace outbox::providers::iso3166 {

struct packed_key {
  std::uint32_t key_at;
  std::uint32_t value_at;
  std::uint16_t key_size;
  std::uint16_t value_size;
};

// Rows sorted by key (bytewise), keys unique.
struct key_table {
  std::span<const packed_key> rows;
  std::string_view text;

  [[nodiscard]] std::string_view key(const packed_key& row) const { return text.substr(row.key_at, row.key_size); }
  [[nodiscard]] std::string_view value(const packed_key& row) const {
    return text.substr(row.value_at, row.value_size);
  }
  // The value stored for `key`, if any (binary search).
  [[nodiscard]] std::optional<std::string> find(std::string_view key) const;
};

// Match key of a country's alpha-2, alpha-3, name, official name, common name
// or alias -> lower-case alpha-2 ("unitedstates" -> "us").
[[nodiscard]] key_table country_keys();
// Lower-case alpha-2 + "|" + match key of a subdivision's full code, code part
// or names -> lower-case code part ("us|california" -> "ca").
[[nodiscard]] key_table subdivision_keys();
// Lower-case full code -> the data's first name ("de-by" -> "Bayern").
[[nodiscard]] key_table subdivision_names();

}  // namespace outbox::providers::iso3166

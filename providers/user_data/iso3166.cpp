#include "providers/user_data/iso3166.hpp"

#include <algorithm>
#include <unordered_map>

#include "providers/user_data/iso3166_keys.hpp"
#include "providers/user_data/unicode_text.hpp"

namespace outbox::providers::iso3166 {

std::optional<std::string> key_table::find(std::string_view wanted) const {
  const auto it = std::lower_bound(rows.begin(), rows.end(), wanted,
                                   [this](const packed_key& row, std::string_view k) { return key(row) < k; });
  if (it == rows.end() || key(*it) != wanted) return std::nullopt;
  return std::string{value(*it)};
}

namespace {

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string lower_ascii(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// CRM rows repeat a few countries and states thousands of times: remember the
// answer per raw text (ICU folding costs microseconds a call). Bounded: cleared
// when full, since a hostile feed of unique values must not grow it forever.
template <class Compute>
std::optional<std::string> memoized(std::unordered_map<std::string, std::optional<std::string>>& memo, std::string key,
                                    Compute compute) {
  constexpr std::size_t max_entries = 4096;
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  auto value = compute();
  if (memo.size() >= max_entries) memo.clear();
  memo.emplace(std::move(key), value);
  return value;
}

}  // namespace

std::optional<std::string> country_code(std::string_view raw) {
  thread_local std::unordered_map<std::string, std::optional<std::string>> memo;
  return memoized(memo, std::string{raw}, [&]() -> std::optional<std::string> {
    const std::string key = unicode::match_key(raw);
    if (key.empty()) return std::nullopt;
    return country_keys().find(key);
  });
}

std::optional<std::string> subdivision_code(std::string_view alpha2, std::string_view raw) {
  const bool two_letters = alpha2.size() == 2 && is_ascii_letter(alpha2[0]) && is_ascii_letter(alpha2[1]);
  if (!two_letters) return std::nullopt;
  thread_local std::unordered_map<std::string, std::optional<std::string>> memo;
  return memoized(memo, lower_ascii(alpha2) + "|" + std::string{raw}, [&]() -> std::optional<std::string> {
    const std::string key = unicode::match_key(raw);
    if (key.empty()) return std::nullopt;
    return subdivision_keys().find(lower_ascii(alpha2) + "|" + key);
  });
}

std::optional<std::string> subdivision_name(std::string_view alpha2, std::string_view raw) {
  const auto code = subdivision_code(alpha2, raw);
  if (!code) return std::nullopt;
  return subdivision_names().find(lower_ascii(alpha2) + "-" + *code);
}

}  // namespace outbox::providers::iso3166

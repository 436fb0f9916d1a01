#include "providers/iso3166.hpp"

#include <unordered_map>
#include <vector>

#include "providers/unicode_text.hpp"

namespace outbox::providers::iso3166 {
namespace {

// Names CRMs use that iso-codes lacks: the parts of the United Kingdom, which
// the data only knows as GB's subdivisions, and former or customary short names.
constexpr country_alias alias_table[] = {
    {"UK", "GB"},          {"Great Britain", "GB"}, {"Britain", "GB"},   {"England", "GB"},
    {"Scotland", "GB"},    {"Wales", "GB"},         {"Northern Ireland", "GB"},
    {"Russia", "RU"},      {"Turkey", "TR"},        {"Ivory Coast", "CI"}, {"Cape Verde", "CV"},
    {"Swaziland", "SZ"},   {"Macedonia", "MK"},     {"Vatican", "VA"},   {"Palestine", "PS"},
    {"Holland", "NL"},
};

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string lower_ascii(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// match key -> lower-case code. The first entry added for a key wins, so callers
// add the strongest forms (codes, then top-level names) first.
using key_index = std::unordered_map<std::string, std::string>;

void add(key_index& index, std::string prefix, std::string_view text, std::string_view code) {
  std::string key = unicode::match_key(text);
  if (key.empty()) return;
  index.emplace(std::move(prefix) + key, lower_ascii(code));
}

const key_index& country_index() {
  static const key_index index = [] {
    key_index built;
    for (const auto& c : countries()) {
      add(built, {}, c.alpha2, c.alpha2);
      add(built, {}, c.alpha3, c.alpha2);
    }
    for (const auto& c : countries()) {
      add(built, {}, c.name, c.alpha2);
      add(built, {}, c.official_name, c.alpha2);
      add(built, {}, c.common_name, c.alpha2);
    }
    for (const auto& a : country_aliases()) add(built, {}, a.name, a.alpha2);
    return built;
  }();
  return index;
}

// The other names in a name: "Girona [Gerona]" is also "Girona" and "Gerona";
// "Sofia (stolitsa)" (BG-22) also "Sofia", unless a subdivision is named so (BG-23).
std::vector<std::string_view> other_names(std::string_view name) {
  std::vector<std::string_view> out;
  if (const auto open = name.find(" ["); open != std::string_view::npos) {
    out.push_back(name.substr(0, open));
    if (const auto close = name.find(']', open); close != std::string_view::npos) {
      out.push_back(name.substr(open + 2, close - open - 2));
    }
  }
  if (const auto open = name.find(" ("); open != std::string_view::npos) out.push_back(name.substr(0, open));
  return out;
}

// "us|" + match key -> code part ("ca").
const key_index& subdivision_index() {
  static const key_index index = [] {
    key_index built;
    const auto country_of = [](const subdivision_entry& s) { return lower_ascii(s.code.substr(0, 2)) + "|"; };
    const auto code_part = [](const subdivision_entry& s) { return s.code.substr(s.code.find('-') + 1); };
    for (const auto& s : subdivisions()) {
      add(built, country_of(s), s.code, code_part(s));
      add(built, country_of(s), code_part(s), code_part(s));
    }
    // Whole names before their parts, top-level subdivisions before their children.
    for (const bool whole : {true, false}) {
      for (const bool top_level : {true, false}) {
        for (const auto& s : subdivisions()) {
          if (s.parent.empty() != top_level) continue;
          if (whole) add(built, country_of(s), s.name, code_part(s));
          if (!whole) {
            for (const auto name : other_names(s.name)) add(built, country_of(s), name, code_part(s));
          }
        }
      }
    }
    return built;
  }();
  return index;
}

std::optional<std::string> find(const key_index& index, const std::string& key) {
  const auto it = index.find(key);
  if (it == index.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::span<const country_alias> country_aliases() { return alias_table; }

namespace {

// CRM rows repeat a few countries and states thousands of times: remember the
// answer per raw text (ICU folding costs microseconds a call). Bounded: cleared
// when full, since a hostile feed of unique values must not grow it forever.
template <class Compute>
std::optional<std::string> memoized(std::unordered_map<std::string, std::optional<std::string>>& memo,
                                    std::string key, Compute compute) {
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
    return find(country_index(), key);
  });
}

std::optional<std::string> subdivision_code(std::string_view alpha2, std::string_view raw) {
  const bool two_letters = alpha2.size() == 2 && is_ascii_letter(alpha2[0]) && is_ascii_letter(alpha2[1]);
  if (!two_letters) return std::nullopt;
  thread_local std::unordered_map<std::string, std::optional<std::string>> memo;
  return memoized(memo, lower_ascii(alpha2) + "|" + std::string{raw}, [&]() -> std::optional<std::string> {
    const std::string key = unicode::match_key(raw);
    if (key.empty()) return std::nullopt;
    return find(subdivision_index(), lower_ascii(alpha2) + "|" + key);
  });
}

std::optional<std::string> subdivision_name(std::string_view alpha2, std::string_view raw) {
  const auto code = subdivision_code(alpha2, raw);
  if (!code) return std::nullopt;
  // "de-by" -> "Bayern": full lower-case code -> the data's (first) name.
  static const std::unordered_map<std::string, std::string_view> names = [] {
    std::unordered_map<std::string, std::string_view> built;
    for (const auto& s : subdivisions()) {
      const auto names_in = other_names(s.name);
      built.emplace(lower_ascii(s.code), names_in.empty() ? s.name : names_in.front());
    }
    return built;
  }();
  const auto it = names.find(lower_ascii(alpha2) + "-" + *code);
  if (it == names.end()) return std::nullopt;
  return std::string{it->second};
}

}  // namespace outbox::providers::iso3166

// Writes the look-up indexes of providers/user_data/iso3166_keys.hpp as C++ source:
//
//     gen_iso3166_keys OUTPUT.cpp
//
// Built and run by CMake after scripts/gen_iso3166.py, linked with the tables
// that script writes and with providers/user_data/unicode_text.cpp, so each key is folded
// by the very function the dispatcher applies to a CRM's text at run time.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "providers/user_data/iso3166.hpp"
#include "providers/user_data/unicode_text.hpp"

namespace {

using namespace outbox::providers;

std::string lower_ascii(std::string_view s) {
  std::string out{s};
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Keys in priority order: the first entry added for a key wins, so callers add
// the strongest forms (codes, then top-level names) first.
class index_builder {
 public:
  void add(const std::string& prefix, std::string_view text, std::string_view value) {
    const std::string key = unicode::match_key(text);
    if (key.empty()) return;
    put(prefix + key, lower_ascii(value));
  }
  void put(std::string key, std::string value) {
    if (seen_.insert(key).second) rows_.emplace_back(std::move(key), std::move(value));
  }
  std::vector<std::pair<std::string, std::string>> sorted() && {
    std::sort(rows_.begin(), rows_.end());
    return std::move(rows_);
  }

 private:
  std::unordered_set<std::string> seen_;
  std::vector<std::pair<std::string, std::string>> rows_;
};

auto country_index() {
  index_builder built;
  for (const auto& c : iso3166::countries()) {
    built.add({}, c.alpha2, c.alpha2);
    built.add({}, c.alpha3, c.alpha2);
  }
  for (const auto& c : iso3166::countries()) {
    built.add({}, c.name, c.alpha2);
    built.add({}, c.official_name, c.alpha2);
    built.add({}, c.common_name, c.alpha2);
  }
  for (const auto& a : iso3166::country_aliases()) built.add({}, a.name, a.alpha2);
  return std::move(built).sorted();
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

std::string country_of(const iso3166::subdivision_entry& s) { return lower_ascii(s.code.substr(0, 2)) + "|"; }
std::string_view code_part(const iso3166::subdivision_entry& s) { return s.code.substr(s.code.find('-') + 1); }

auto subdivision_index() {
  index_builder built;
  for (const auto& s : iso3166::subdivisions()) {
    built.add(country_of(s), s.code, code_part(s));
    built.add(country_of(s), code_part(s), code_part(s));
  }
  // Whole names before their parts, top-level subdivisions before their children.
  for (const bool whole : {true, false}) {
    for (const bool top_level : {true, false}) {
      for (const auto& s : iso3166::subdivisions()) {
        if (s.parent.empty() != top_level) continue;
        if (whole) built.add(country_of(s), s.name, code_part(s));
        if (!whole) {
          for (const auto name : other_names(s.name)) built.add(country_of(s), name, code_part(s));
        }
      }
    }
  }
  return std::move(built).sorted();
}

// "de-by" -> "Bayern": full lower-case code -> the data's (first) name.
auto subdivision_name_index() {
  index_builder built;
  for (const auto& s : iso3166::subdivisions()) {
    const auto names = other_names(s.name);
    built.put(lower_ascii(s.code), std::string{names.empty() ? s.name : names.front()});
  }
  return std::move(built).sorted();
}

// A C++ string literal; octal escapes (always 3 digits) for bytes outside
// printable ASCII, so the source is ASCII whatever the locale.
std::string literal(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += c;
    } else if (byte >= 0x20 && byte < 0x7F) {
      out += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\%03o", byte);
      out += escaped;
    }
  }
  return out + "\"";
}

void write_table(std::ostream& out, const std::string& name,
                 const std::vector<std::pair<std::string, std::string>>& rows) {
  if (rows.empty()) throw std::runtime_error(name + ": no rows (is the iso-codes data empty?)");
  std::size_t total = 0;
  for (const auto& [key, value] : rows) {
    if (key.size() > UINT16_MAX || value.size() > UINT16_MAX) throw std::runtime_error(name + ": a field over 64 KiB");
    total += key.size() + value.size();
  }
  if (total > UINT32_MAX) throw std::runtime_error(name + ": text over 4 GiB");
  std::string rows_source;
  out << "constexpr char " << name << "_text[] =\n";
  std::size_t at = 0;
  for (const auto& [key, value] : rows) {
    out << "    " << literal(key) << literal(value) << "\n";
    rows_source += "    {" + std::to_string(at) + ", " + std::to_string(at + key.size()) + ", " +
                   std::to_string(key.size()) + ", " + std::to_string(value.size()) + "},\n";
    at += key.size() + value.size();
  }
  out << "    \"\";\n\nconstexpr packed_key " << name << "_rows[] = {\n" << rows_source << "};\n\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gen_iso3166_keys OUTPUT.cpp\n";
    return 2;
  }
  // Written beside the output and renamed over it: a failed run leaves no half file.
  const std::string output = argv[1];
  const std::string partial = output + ".partial";
  std::ofstream out(partial);
  out << "// Generated by gen_iso3166_keys (scripts/gen_iso3166_keys.cpp) from iso-codes " << iso3166::data_version()
      << ". Do not edit.\n"
      << "#include \"providers/user_data/iso3166_keys.hpp\"\n\nnamespace outbox::providers::iso3166 {\nnamespace {\n\n";
  try {
    write_table(out, "country", country_index());
    write_table(out, "subdivision", subdivision_index());
    write_table(out, "subdivision_name", subdivision_name_index());
  } catch (const std::exception& e) {
    std::cerr << "gen_iso3166_keys: " << e.what() << "\n";
    return 1;
  }
  out << "}  // namespace\n\n";
  for (const std::string name : {"country", "subdivision", "subdivision_name"}) {
    const std::string function = name == "subdivision_name" ? "subdivision_names" : name + "_keys";
    out << "key_table " << function << "() { return {" << name << "_rows, {" << name << "_text, sizeof " << name
        << "_text - 1}}; }\n";
  }
  out << "\n}  // namespace outbox::providers::iso3166\n";
  out.close();
  if (!out || std::rename(partial.c_str(), output.c_str()) != 0) {
    std::cerr << "gen_iso3166_keys: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}

#include "tests/support/dockerfile.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace outbox::test {
namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

std::vector<std::string> stage::all(const std::string& keyword) const {
  std::vector<std::string> out;
  for (const auto& i : instructions) {
    if (i.keyword == keyword) out.push_back(i.args);
  }
  return out;
}

std::string stage::runs() const {
  std::string out;
  for (const auto& r : all("RUN")) out += r + "\n";
  return out;
}

std::vector<std::pair<std::string, std::string>> image_environment(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto stages = parse_dockerfile(text);
  if (stages.empty()) return out;
  for (const auto& args : stages.back().all("ENV")) {
    std::istringstream words(args);
    std::string word;
    words >> word;
    if (word.find('=') == std::string::npos) {  // ENV K V: the rest of the line is the value
      std::string value;
      std::getline(words, value);
      out.emplace_back(word, trimmed(value));
      continue;
    }
    do {
      const auto eq = word.find('=');
      if (eq != std::string::npos) out.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    } while (words >> word);
  }
  return out;
}

std::vector<stage> parse_dockerfile(const std::string& text) {
  std::vector<stage> stages;
  std::istringstream in(text);
  std::string logical;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const bool continued = !line.empty() && line.back() == '\\';
    logical += continued ? line.substr(0, line.size() - 1) : line;
    if (continued) continue;
    const auto start = logical.find_first_not_of(" \t");
    const auto space = logical.find_first_of(" \t", start);
    instruction ins{logical.substr(start, space - start), space == std::string::npos ? "" : logical.substr(space + 1)};
    std::transform(ins.keyword.begin(), ins.keyword.end(), ins.keyword.begin(), ::toupper);
    logical.clear();
    if (ins.keyword == "FROM") {
      stages.push_back(stage{ins.args, {}});
    } else if (!stages.empty()) {
      stages.back().instructions.push_back(ins);
    }
  }
  return stages;
}

std::vector<std::string> shell_commands(const std::string& run_args) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= run_args.size()) {
    const auto next = run_args.find("&&", at);
    const auto command = trimmed(run_args.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (!command.empty()) out.push_back(command);
    if (next == std::string::npos) break;
    at = next + 2;
  }
  return out;
}

}  // namespace outbox::test

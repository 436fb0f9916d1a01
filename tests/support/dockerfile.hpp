#pragma once
// The Dockerfile read as text (there is no Docker engine here): its stages and
// their instructions, and the shell commands of one RUN instruction.
#include <string>
#include <utility>
#include <vector>

namespace outbox::test {

struct instruction {
  std::string keyword;  // upper case: RUN, USER, ...
  std::string args;     // continuation lines joined
};

struct stage {
  std::string from;  // FROM's arguments
  std::vector<instruction> instructions;

  [[nodiscard]] std::vector<std::string> all(const std::string& keyword) const;
  [[nodiscard]] std::string runs() const;  // every RUN's arguments, one a line
};

// The Dockerfile's stages: comments dropped, `\` continuations joined.
[[nodiscard]] std::vector<stage> parse_dockerfile(const std::string& text);

// The ENV settings of the last stage (the image that runs), in order: `ENV K=V ...`
// (unquoted values) and the legacy `ENV K V`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> image_environment(const std::string& text);

// A RUN instruction's arguments split at `&&`, each command trimmed.
[[nodiscard]] std::vector<std::string> shell_commands(const std::string& run_args);

}  // namespace outbox::test

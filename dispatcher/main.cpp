// Entry point: only wires the command line to the subcommands.
#include <string>
#include <vector>

#include "dispatcher/cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return outbox::cli::main(args);
}

// Entry point: only wires the command line to the subcommands.
#include <pthread.h>

#include <csignal>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/cli/cli.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "run") {
    // Held pending until `run` has its handler (dispatcher/cli/cli_run.cpp): PID 1
    // of a container drops a SIGTERM it has no handler for.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  return outbox::cli::main(args);
}

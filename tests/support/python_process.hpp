#pragma once
// Runs a Python 3 script (or `python3 -c ...`) as a child process to
// completion, for end-to-end tests that drive the CRM side (examples/django).
// stdout and stderr are captured separately, so a script can print a JSON
// report on stdout and its diagnostics on stderr.
#include <chrono>
#include <string>
#include <vector>

#include "dispatcher/config/config.hpp"

#include "tests/support/child_process.hpp"

namespace outbox::test {

using python_result = finished_child;

// The interpreter: $TEST_PYTHON3 when set, else Debian's /usr/bin/python3 when
// it exists (where apt's python3-django and python3-psycopg2 are installed; a
// python3 earlier in PATH, e.g. a pyenv shim, would not see them), else
// python3 from PATH.
[[nodiscard]] std::string python_interpreter();

// Runs `<python_interpreter()> -B <args...>` with child_environment(overrides)
// (dispatcher_process.hpp: this process's environment without DATABASE_URL and
// OUTBOX_*, then `overrides`) plus PYTHONDONTWRITEBYTECODE=1, stdin from
// /dev/null. Waits on a pidfd until it exits or `timeout` passes (then SIGKILL).
// Throws std::system_error when the interpreter cannot be started.
[[nodiscard]] python_result run_python(const std::vector<std::string>& args, const environment& overrides,
                                       std::chrono::milliseconds timeout);

}  // namespace outbox::test

#!/usr/bin/env bash
# The thorough lint: clang-tidy (.clang-tidy: readability-function-size, the 60-line
# rule) over every source file of db/ dispatcher/ providers/, one parse per file.
# It takes about 3 minutes on 2 cores (3 min 5 s on 2026-12-04), so the test command runs the fast checks
# instead (scripts/check_sizes.sh, the clang-format check); run this one before a
# large change lands or when check_sizes.sh and clang-tidy might disagree.
#   scripts/lint.sh            every file
#   scripts/lint.sh FILE...    only these files
# Uses the `lint` preset (build-lint/): no unity build and no precompiled header,
# so compile_commands.json holds one plain compile per source file.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset lint >/dev/null
# The generated sources (ISO 3166 tables, migrations, revision) are not linted, but the
# headers the linted files include must exist: nothing here includes a generated header.
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'db/*.cpp' 'dispatcher/*.cpp' 'providers/*.cpp')
fi
# The compile commands are gcc's: clang does not know some of its warning options.
run-clang-tidy-14 -quiet -extra-arg=-Wno-unknown-warning-option -p build-lint -j "$(nproc)" "${files[@]/#/$PWD/}"

#!/usr/bin/env bash
# The test command: installs what is missing, builds, starts a throwaway
# PostgreSQL and runs every test case (one ctest test per doctest case), then
# builds the libFuzzer targets with clang and runs each for a few seconds.
#   scripts/test.sh              everything (build/, then build-fuzz/)
#   scripts/test.sh --sanitize   the same tests built with ASan + UBSan (build-asan/);
#                                the fuzz targets are sanitized already, so not rerun
#   scripts/test.sh --no-fuzz    skip the fuzz build and runs
# OUTBOX_TEST_JOBS=N caps parallel compiles and tests (default: nproc);
# OUTBOX_FUZZ_SECONDS=N fuzzes each target N seconds instead of 5.
# docs/testing.md has the details and the commands to run parts by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=default
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --sanitize) preset=asan fuzz=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: scripts/test.sh [--sanitize] [--no-fuzz]" >&2; exit 2 ;;
  esac
done
jobs=${OUTBOX_TEST_JOBS:-$(nproc)}

started=$(date +%s)
scripts/check_sizes.sh  # no source file over 500 lines, no function over 60
scripts/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
build_dir=build
[ "$preset" = asan ] && build_dir=build-asan
# Unit tests run in parallel; PostgreSQL and e2e tests are RUN_SERIAL (CMakeLists.txt).
scripts/with_postgres.sh ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
echo "test.sh: tests passed in $(( $(date +%s) - started )) s"

if ((fuzz)); then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$jobs"
  ctest --test-dir build-fuzz --output-on-failure
fi
echo "test.sh: done in $(( $(date +%s) - started )) s"

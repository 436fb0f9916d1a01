#!/usr/bin/env bash
# The test command: installs what is missing, builds the dispatcher exactly as
# the Dockerfile does (scripts/build_image.sh: Release, stripped, in build/), adds
# the test programs to that build (compiled at -O0, linked against the image's
# Release libraries), starts a throwaway PostgreSQL and runs every test case (one
# ctest test per doctest case, the image smoke test among them) while it builds
# the benchmarks and the libFuzzer targets (clang) at low priority and runs each
# fuzz target for a few seconds.
#   scripts/test.sh              everything (build/, then build-fuzz/)
#   scripts/test.sh --sanitize   the same tests built with ASan + UBSan (build-asan/);
#                                the fuzz targets are sanitized already, so not rerun
#   scripts/test.sh --no-fuzz    skip the fuzz build and runs
# OUTBOX_TEST_JOBS=N caps parallel compiles and tests (default: nproc);
# OUTBOX_FUZZ_SECONDS=N fuzzes each target N seconds instead of 5.
# docs/testing.md has the details and the commands to run parts by hand.
set -euo pipefail
# The user data module is refused when group or others may write it (user_data_loader.cpp):
# build trees come out as the image has them whatever the shell's umask (002 for many users).
umask 022
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
scripts/check_format.sh  # every C++ file as clang-format (.clang-format) writes it
phase() { echo "test.sh: $1 at $(( $(date +%s) - started )) s"; }
# Fails the run when a build's log has a compiler warning, printing the log if asked.
fail_on_warnings() {  # LOG WHAT [show]
  if grep -E '(^|[[:space:]])warning:' "$1" >/dev/null; then
    [ "${3:-}" = show ] && cat "$1"
    echo "test.sh: $2 printed warnings (above)" >&2
    exit 1
  fi
}
phase "set-up done"
if [ "$preset" = asan ]; then
  build_dir=build-asan
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
else
  build_dir=build
  # A developer preset's build/ (not Release) would be rebuilt at every switch: start clean.
  if [ -f build/CMakeCache.txt ] && ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' build/CMakeCache.txt; then
    rm -rf build
  fi
  scripts/build_image.sh build   # the Dockerfile's own cmake, build and strip commands
  phase "image build done"
  # The tests join that build directory: same flags, so the image's libraries are not rebuilt.
  log=$(mktemp)
  cmake -S . -B build -DOUTBOX_BUILD_TESTS=ON >/dev/null
  cmake --build build -j "$jobs" 2>&1 | tee "$log"
  fail_on_warnings "$log" "the test build"
  rm -f "$log"
  export OUTBOX_REQUIRE_IMAGE_BUILD=1  # tests/deploy/image_build_test.cpp, tests/e2e/image_smoke_e2e.cpp
fi
phase "test build done"
export OUTBOX_REQUIRE_DM_BODIES=1  # checks/datamanager_protos: the suite sends many events:ingest bodies
# While the tests run (most of them wait on a server, a lease or a timer, and
# the PostgreSQL and e2e tests run one of each at a time), the idle CPU builds
# the benchmarks (excluded from a plain build) and the fuzz targets, and runs
# those, at the lowest priority.
side_log=$(mktemp)
side_builds() {
  if [ "$preset" != asan ]; then
    cmake --build build -j "$jobs" --target outbox_bench rss_floor
  fi
  if ((fuzz)); then
    cmake --preset fuzz >/dev/null
    cmake --build --preset fuzz -j "$jobs"
    # Each target for OUTBOX_FUZZ_SECONDS (default 5) of wall time, here too.
    ctest --test-dir build-fuzz --output-on-failure -j "$jobs"
  fi
}
# setsid gives the job a process group to kill, and also a session: with the
# kernel's autogroup scheduling (Debian's default), each session gets an equal
# share of the CPU whatever its processes' nice, so the session's own nice
# (/proc/self/autogroup) is what keeps the tests first.
setsid nice -n 19 bash -c "set -euo pipefail; echo 19 >/proc/self/autogroup 2>/dev/null || true; $(declare -f side_builds); preset=$preset fuzz=$fuzz jobs=$jobs; side_builds" >"$side_log" 2>&1 &
side_pid=$!
# Two PostgreSQL tests, one e2e test and one test that restarts its own server
# at a time (their lanes' resource locks, CMakeLists.txt), mostly waiting on
# servers and timers, and unit tests in one more slot.
# PG_TEST_THROWAWAY_SERVER: the server is deleted afterwards, so tests leave their
# databases (each DROP DATABASE forces a checkpoint; tests/support/pg_fixture.cpp).
if ! PG_TEST_THROWAWAY_SERVER=1 scripts/with_postgres.sh ctest --test-dir "$build_dir" --output-on-failure -j "$((jobs + 3))"; then
  kill -- -"$side_pid" 2>/dev/null || true  # its own process group (setsid): cmake, ninja and compilers too
  exit 1
fi
if [ "$preset" != asan ] && docker info >/dev/null 2>&1; then
  scripts/image_smoke.sh
else
  echo "test.sh: no Docker engine answers (docker info): the container smoke test (scripts/image_smoke.sh) is skipped"
fi
phase "tests passed"
if ! wait "$side_pid"; then
  cat "$side_log"
  echo "test.sh: the benchmark or fuzz build failed (above)" >&2
  exit 1
fi
fail_on_warnings "$side_log" "the benchmark or fuzz build" show
grep -E '^(100% tests passed|Total Test time)' "$side_log" || true  # the fuzz runs' summary
rm -f "$side_log"
phase "benchmark and fuzz builds and fuzz runs done"
echo "test.sh: done in $(( $(date +%s) - started )) s"

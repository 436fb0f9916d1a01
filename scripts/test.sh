#!/usr/bin/env bash
# The test command: installs what is missing, builds, starts a throwaway
# PostgreSQL and runs every test program. `scripts/test.sh --sanitize` builds
# and runs everything under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=default
for arg in "$@"; do
  case "$arg" in
    --sanitize) preset=asan ;;
    *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
  esac
done

started=$(date +%s)
scripts/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
build_dir=build
[ "$preset" = asan ] && build_dir=build-asan
scripts/with_postgres.sh ctest --test-dir "$build_dir" --output-on-failure --timeout 900
echo "test.sh: done in $(( $(date +%s) - started )) s"

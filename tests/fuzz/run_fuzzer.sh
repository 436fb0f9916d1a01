#!/usr/bin/env bash
# Runs one libFuzzer target for a while over a throwaway copy of its corpus:
#   tests/fuzz/run_fuzzer.sh <fuzzer> <seed dir> <artifact dir> [seconds]
# The seeds are only read; new inputs go to a temp corpus that is removed. A crash
# leaves its input in <artifact dir> (crash-..., leak-..., timeout-...) and fails.
# OUTBOX_FUZZ_SECONDS overrides the duration (ctest runs use 5 s).
set -euo pipefail
fuzzer=$1 seeds=$2 artifacts=$3
seconds=${OUTBOX_FUZZ_SECONDS:-${4:-5}}
name=$(basename "$fuzzer")
mkdir -p "$artifacts"
corpus=$(mktemp -d "/tmp/$name.XXXXXX")
trap 'rm -rf "$corpus"' EXIT
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$artifacts/$name-")
dict="$(dirname "$0")/${name%_fuzz}.dict"
[ -f "$dict" ] && args+=(-dict="$dict")
# UBSan reports fail the run (the build uses -fno-sanitize-recover); leaks too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
dirs=("$corpus")
[ -d "$seeds" ] && dirs+=("$seeds")  # a new target may have no seeds yet
status=0
"$fuzzer" "${args[@]}" "${dirs[@]}" || status=$?
if [ $status -ne 0 ]; then
  echo "run_fuzzer: $name failed ($status); reproduce with: $fuzzer $artifacts/$name-<crash file>" >&2
fi
exit $status

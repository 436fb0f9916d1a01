#!/usr/bin/env bash
# Builds the dispatcher and outbox_bench (Release) and runs the whole benchmark
# against a throwaway PostgreSQL 15 cluster (scripts/with_postgres.sh): end-to-end
# throughput, commit-to-request latency at a steady rate, and what the NOTIFY
# trigger costs the CRM (pgbench). Prints a summary table at the end and writes
# every figure to $build/bench-results.json. See docs/benchmarks.md.
#
#   usage: bench/run.sh [--quick] [--no-build] [--wake-modes | --destinations] [outbox_bench options...]
#     --quick        10k rows, 5 s latency, 5 s per pgbench mode (a smoke run)
#     --wake-modes   only the wake-modes scenario (pgbench at 1, 4, 16, 32 clients in
#                    each wake mode with the dispatcher delivering, then latency per
#                    mode; about 6 min); figures in $build/bench-wake-modes.json
#     --destinations one registry destination, then 1,000 (100 paused, 10 refusing
#                    connections): claim latency, RSS, reload, /metrics, status
#                    (about 1 min); figures in $build/bench-destinations.json
#     e.g. bench/run.sh --rows 100000 --trigger-seconds 60 --claim-batch 200
#   environment: OUTBOX_BENCH_BUILD_DIR (default: build-bench)
set -euo pipefail
# The user data module is refused when group or others may write it (user_data_loader.cpp):
# build trees come out as the image has them whatever the shell's umask (002 for many users).
umask 022

root=$(cd "$(dirname "$0")/.." && pwd)
build=${OUTBOX_BENCH_BUILD_DIR:-$root/build-bench}
args=()
build_first=1
command=all
results=bench-results.json
for a in "$@"; do
  case $a in
    --quick) args+=(--rows 10000 --seconds 5 --warmup 1 --trigger-seconds 5 --wake-seconds 5) ;;
    --no-build) build_first=0 ;;
    --wake-modes) command=wake-modes results=bench-wake-modes.json ;;
    --destinations) command=destinations results=bench-destinations.json ;;
    *) args+=("$a") ;;
  esac
done

if [ $build_first -eq 1 ]; then
  # The binary users get: the Dockerfile's own build (scripts/build_image.sh), then
  # the bench program added to that directory with the same flags.
  (cd "$root" && scripts/build_image.sh "$build")
  cmake -S "$root" -B "$build" -DOUTBOX_BUILD_TESTS=ON >/dev/null
  cmake --build "$build" -j2 --target outbox_bench rss_floor
fi

rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain 2>/dev/null | wc -l)
echo "run.sh: commit $rev ($dirty files changed); $(nproc) cores; load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
"$root/scripts/with_postgres.sh" "$build/outbox_bench" "$command" --json "$build/$results" "${args[@]}"
echo "run.sh: load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"

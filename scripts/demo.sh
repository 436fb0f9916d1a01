#!/usr/bin/env bash
# The main job, end to end on a throwaway machine state: installs what is
# missing, builds the dispatcher and the demo's provider stand-ins, starts a
# temporary PostgreSQL, local HTTPS Meta / TikTok / Google / webhook endpoints
# and the dispatcher with its metrics endpoint, enqueues a mix of lead events
# (one duplicate, one bad row, a TikTok outage that recovers), waits until every
# row is settled and prints a summary. Everything it starts is stopped and
# removed at the end.
#   OUTBOX_BUILD_DIR   build directory, relative to the repository root or absolute (default build)
#   OUTBOX_BUILD_JOBS  parallel compile jobs (default: every core)
# Both are read here only: the dispatcher refuses unknown OUTBOX_* variables.
set -euo pipefail
# The user data module is refused when group or others may write it (user_data_loader.cpp):
# build trees come out as the image has them whatever the shell's umask (002 for many users).
umask 022
cd "$(dirname "$0")/.."
build_dir=${OUTBOX_BUILD_DIR:-build}
scripts/setup.sh
if [ -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" >/dev/null  # keep the directory's own generator and options
else
  # As `cmake --preset default`, so the test command reuses the objects.
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" >/dev/null
fi
cmake --build "$build_dir" -j "${OUTBOX_BUILD_JOBS:-$(nproc)}" --target dispatcher demo_sink
unset OUTBOX_BUILD_DIR OUTBOX_BUILD_JOBS
exec scripts/with_postgres.sh scripts/demo_inside.sh "$build_dir"

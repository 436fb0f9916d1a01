#!/usr/bin/env bash
# The main job, end to end on a throwaway machine state: installs what is
# missing, builds, starts a temporary PostgreSQL and a local HTTPS endpoint,
# runs the dispatcher, enqueues lead events (one malformed, one duplicate, one
# to an endpoint that fails once), waits for delivery and prints a summary.
# Everything it starts is stopped and removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target dispatcher demo_sink
exec scripts/with_postgres.sh scripts/demo_inside.sh

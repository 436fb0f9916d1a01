#!/usr/bin/env bash
# Where a Docker engine answers (scripts/test.sh asks `docker info`): builds the
# image and runs the smoke scenario with the image's own files. `--version` runs
# in the container; the delivery scenario (tests/e2e/image_smoke_e2e.cpp) runs
# the dispatcher and module copied out of the image, laid out as the image lays
# them out, against the test's PostgreSQL and protocol fakes on this machine.
# Never run on the project's CI machines (no engine there): see docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=outbox-dispatcher:smoke
docker build -t "$tag" --build-arg OUTBOX_REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" .
docker run --rm "$tag" --version
root=$(mktemp -d)
trap 'rm -rf "$root"; docker rm -f outbox-smoke >/dev/null 2>&1 || true' EXIT
docker create --name outbox-smoke "$tag" >/dev/null
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/dispatcher"
docker cp outbox-smoke:/usr/local/bin/dispatcher "$root/usr/local/bin/dispatcher"
docker cp outbox-smoke:/usr/local/lib/dispatcher/dispatcher-user-data.so "$root/usr/local/lib/dispatcher/"
OUTBOX_IMAGE_ROOT="$root" scripts/with_postgres.sh build/e2es -tc="image smoke*"

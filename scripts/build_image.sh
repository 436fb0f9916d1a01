#!/usr/bin/env bash
# Builds the dispatcher exactly as the Dockerfile's build stage does: runs the
# commands of its `RUN cmake -S . -B /build ...` instruction, with /build
# replaced by the directory given, from the repository's root (the stage's
# WORKDIR, where `COPY . .` put it). Records what it ran, one command per line,
# in <dir>/image-build-commands (tests/deploy/image_build_test.cpp compares them
# with the Dockerfile), and fails when the build printed a compiler warning: the
# image's own build is the one CI holds to -Werror's standard, without changing
# its command line (CMakeLists.txt, OUTBOX_WARNINGS_AS_ERRORS).
#   scripts/build_image.sh [dir]     dir defaults to build
set -euo pipefail
# The user data module is refused when group or others may write it (user_data_loader.cpp):
# build trees come out as the image has them whatever the shell's umask (002 for many users).
umask 022
cd "$(dirname "$0")/.."
dir=${1:-build}

# The instruction, continuation lines joined, split at `&&`.
instruction=$(awk '
  /^FROM / { stage++ }
  stage == 1 && /^RUN cmake / { grab = 1 }
  grab { line = line $0; if ($0 !~ /\\$/) { print line; exit } ; line = substr(line, 1, length(line) - 1) }
' Dockerfile)
[ -n "$instruction" ] || { echo "build_image.sh: no 'RUN cmake' in the Dockerfile's build stage" >&2; exit 1; }
instruction=${instruction#RUN }

mkdir -p "$dir"
record="$dir/image-build-commands"
: >"$record"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while IFS= read -r command; do
  command=$(sed -E 's/^[[:space:]]+|[[:space:]]+$//g; s#(^|[[:space:]])/build(/|[[:space:]]|$)#\1'"$dir"'\2#g' <<<"$command")
  [ -n "$command" ] || continue
  printf '%s\n' "$command" >>"$record"
  echo "+ $command"
  bash -euo pipefail -c "$command" 2>&1 | tee -a "$log"
done < <(sed 's/&&/\n/g' <<<"$instruction")

if grep -E '(^|[[:space:]])warning:' "$log" >/dev/null; then
  echo "build_image.sh: the image's build printed warnings (above); fix the code, or silence a" >&2
  echo "compiler false positive beside the flag in CMakeLists.txt with the reason" >&2
  exit 1
fi

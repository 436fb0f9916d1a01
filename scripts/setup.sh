#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's archive. Idempotent:
# does nothing when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libpq-dev libboost1.81-dev libssl-dev nlohmann-json3-dev doctest-dev
  postgresql-15 postgresql-contrib ca-certificates openssl
  python3 python3-django python3-psycopg2
  # The fuzz build (docs/testing.md): Debian's clang and its runtimes, libFuzzer included.
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: dependencies present"

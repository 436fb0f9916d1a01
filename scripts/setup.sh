#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12's archive. Idempotent:
# does nothing when everything is already present.
#   scripts/setup.sh               everything: build and test (README, scripts/test.sh, .ci)
#   scripts/setup.sh --build-only  only what compiling the dispatcher needs (the Dockerfile's
#                                  build stage): no PostgreSQL server, no Django, no test tools
#   scripts/setup.sh --list build|test
#                                  print that part's packages, one a line, and install nothing
set -euo pipefail

# Compiling `dispatcher` (cmake -DOUTBOX_BUILD_TESTS=OFF --target dispatcher).
build_packages=(
  build-essential cmake ninja-build pkg-config
  libpq-dev libboost1.81-dev libssl-dev nlohmann-json3-dev
  # scripts/gen_iso3166.py generates the ISO 3166 tables at build time.
  python3
  # User data normalization (docs/normalization.md):
  # ICU: Unicode case mapping as JavaScript's toLowerCase does it, blanks and punctuation.
  libicu-dev
  # ISO 3166-1/-2 country and subdivision tables, compiled into the binary at build time.
  iso-codes
  # libphonenumber: the library itself, and what its headers include (protobuf, abseil).
  # Its headers come from libphonenumber-dev, unpacked below, not installed (see there).
  libphonenumber8 libprotobuf-dev libabsl-dev
)

# The test programs, the demo and the throwaway servers they start (docs/testing.md).
test_packages=(
  doctest-dev
  postgresql-15 postgresql-contrib ca-certificates openssl
  # The Django app's tests (examples/django) and the Kubernetes example's check (YAML).
  python3-django python3-psycopg2 python3-yaml
  # Sealing destination secrets from the CRM (examples/django/outbox_events/sealing.py):
  # X25519, HKDF and AES-GCM from the library Debian keeps, not hand-written crypto.
  python3-cryptography
  # The Django app as a package (examples/django/pyproject.toml): a virtualenv, pip, and the
  # setuptools backend with wheel, which `pip install --no-build-isolation` uses from Debian.
  python3-venv python3-pip python3-setuptools python3-wheel
  # The status page in headless Chromium; promtool for the metrics and alert rules.
  chromium prometheus
  # The fuzz build (docs/testing.md): Debian's clang and its runtimes, libFuzzer included.
  clang-14 libclang-rt-14-dev
  # checks/datamanager_protos: every Data Manager body the tests send, parsed against
  # Google's official v1 protos (fetched from npm, scripts/check_datamanager_protos.py).
  protobuf-compiler python3-protobuf
  # The format check in scripts/test.sh (.clang-format) and the clang-tidy lint
  # (scripts/lint.sh, .clang-tidy).
  clang-format-14 clang-tidy-14
)

usage() {
  echo "usage: scripts/setup.sh [--build-only | --list build|test]" >&2
  exit 2
}

packages=("${build_packages[@]}" "${test_packages[@]}")
case "${1:-}" in
  "") ;;
  --build-only) packages=("${build_packages[@]}") ;;
  --list)
    case "${2:-}" in
      build) printf '%s\n' "${build_packages[@]}" ;;
      test) printf '%s\n' "${test_packages[@]}" ;;
      *) usage ;;
    esac
    exit 0 ;;
  *) usage ;;
esac
[ $# -le 1 ] || usage

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# npm fetches Google's Data Manager protos (checks/datamanager_protos), and the
# Node.js it brings runs the crm benchmark's webhook receiver
# (bench/webhook_receiver.mjs). A machine with Node.js from elsewhere has npm
# already; Debian's npm would conflict with it.
if [ "${1:-}" != --build-only ] && ! command -v npm >/dev/null; then
  missing+=(npm)
fi

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libphonenumber's headers. Debian 12's libphonenumber-dev depends on
# libboost-thread-dev, i.e. Boost 1.74, which conflicts with libboost1.81-dev:
# installing it removes Boost 1.81 and breaks the build. The library is built
# without Boost (its headers pick the POSIX singleton and lock unless
# I18N_PHONENUMBERS_USE_BOOST is defined), so only the headers are needed: the
# exact version of the installed libphonenumber8 is downloaded with apt and its
# usr/include/phonenumbers unpacked under /usr/local/include (CMake links
# libphonenumber.so.8 directly; see CMakeLists.txt).
phonenumber_version=$(dpkg-query -W -f='${Version}' libphonenumber8)
phonenumber_headers=/usr/local/include/phonenumbers
if [ "$(cat "$phonenumber_headers/.debian-version" 2>/dev/null)" != "$phonenumber_version" ]; then
  echo "setup: unpacking the headers of libphonenumber-dev $phonenumber_version into $phonenumber_headers"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && { apt-get download -qq "libphonenumber-dev=$phonenumber_version" 2>/dev/null ||
                   { "${sudo_cmd[@]}" apt-get update -qq && apt-get download -qq "libphonenumber-dev=$phonenumber_version"; }; })
  dpkg-deb -x "$work"/libphonenumber-dev_*.deb "$work/root"
  "${sudo_cmd[@]}" rm -rf "$phonenumber_headers"
  "${sudo_cmd[@]}" cp -r "$work/root/usr/include/phonenumbers" "$phonenumber_headers"
  echo "$phonenumber_version" | "${sudo_cmd[@]}" tee "$phonenumber_headers/.debian-version" >/dev/null
fi
echo "setup: dependencies present"

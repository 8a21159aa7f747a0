#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent:
# quick when everything is there; a clear message when it cannot install.
set -euo pipefail

pkgs=(build-essential cmake pkg-config
      libssl-dev          # OpenSSL EVP: SHA256
      libfiu-dev fiu-utils # fault points, fiu-run/fiu-ctrl
      libcmocka-dev       # unit tests
      lcov libjson-perl libperlio-gzip-perl # coverage; lcov reads gcc 12's JSON gcov output
      clang clang-format) # the clang -Werror build and the format check

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ci/setup.sh: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "ci/setup.sh: missing packages (${missing[*]}) and not root: run 'sudo ci/setup.sh' or install them" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq; then
  echo "ci/setup.sh: apt-get update failed (no network?): cannot install ${missing[*]}" >&2
  exit 1
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "ci/setup.sh: apt-get install failed for ${missing[*]}" >&2
  exit 1
fi

#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, and PyTorch
# (for torchfrtrace, which the artifacts test feeds Backstop's dumps) in a
# venv under build/. Idempotent: quick when everything is there; a clear
# message when it cannot install.
#   --no-torch (or BS_NO_TORCH=1): no PyTorch (that test is then skipped,
#   saying so). Only ci/test.sh installs it; ci/run.sh and ci/sanitize.sh
#   pass --no-torch (they run no torchfrtrace check of their own).
# PyTorch from PyPI, pinned (the version the dumps tests were checked
# against): about 2.5 minutes and 5.3 GB (CUDA libraries included: torch does
# not import without them, and PyTorch's CPU-only index is not reachable
# here), once; the venv is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  case "$arg" in
    --no-torch) BS_NO_TORCH=1 ;;
    *) echo "ci/setup.sh: unknown argument '$arg' (only --no-torch)" >&2; exit 2 ;;
  esac
done

pkgs=(build-essential cmake pkg-config
      libssl-dev          # OpenSSL EVP: SHA256
      libfiu-dev fiu-utils # fault points, fiu-run/fiu-ctrl
      libcmocka-dev       # unit tests
      libxml2-utils       # xmllint: JUnit checked against the Ant schema
      graphviz            # dot: analyze --graph checked (dot -Tsvg)
      python3-venv        # the PyTorch venv
      lcov libjson-perl libperlio-gzip-perl # coverage; lcov reads gcc 12's JSON gcov output
      clang clang-format) # the clang -Werror build and the format check

debs() {
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "ci/setup.sh: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "ci/setup.sh: missing packages (${missing[*]}) and not root: run 'sudo ci/setup.sh' or install them" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get update -qq; then
    echo "ci/setup.sh: apt-get update failed (no network?): cannot install ${missing[*]}" >&2
    return 1
  fi
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "ci/setup.sh: apt-get install failed for ${missing[*]}" >&2
    return 1
  fi
}

# Not fatal: without PyPI the torchfrtrace test skips and says why.
torch() {
  local venv=build/torch-venv version=2.15.0
  [ "${BS_NO_TORCH:-0}" = 1 ] && return 0
  [ -x "$venv/bin/torchfrtrace" ] && return 0
  echo "ci/setup.sh: installing PyTorch $version into $venv (for torchfrtrace)"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" || ! "$venv/bin/pip" install -q "torch==$version"; then
    echo "ci/setup.sh: could not install PyTorch from PyPI: the torchfrtrace test will be skipped" >&2
    rm -rf "$venv"
  fi
}

debs
torch

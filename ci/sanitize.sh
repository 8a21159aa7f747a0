#!/usr/bin/env bash
# Builds the asan (ASan+UBSan) and tsan presets and runs every test under
# each: the core must stay clean under both.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
ci/setup.sh --no-torch
for preset in ${BS_SANITIZERS:-asan tsan}; do
  echo "== $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done

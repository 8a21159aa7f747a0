#!/usr/bin/env bash
# Set-up, build, run the default scenario suite on the embedded simulated
# backend and print the verdict table.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh --no-torch
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"
if [ -x build/default/backstop ]; then
  exec build/default/backstop run "$@"
fi
echo "ci/run.sh: the scenario runner is not built yet; running the unit tests instead"
ctest --preset default

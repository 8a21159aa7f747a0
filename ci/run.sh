#!/usr/bin/env bash
# Set-up, build, run the default scenario suite on the embedded simulated
# backend and print the verdict table. Quick on a fresh clone: no PyTorch
# (only ci/test.sh needs it), and only the backstop binary of the CPU-only
# preset (the simulated ranks need no CUDA kernels, the suite no unit tests).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh --no-torch
cmake --preset cpu >/dev/null
cmake --build --preset cpu -j "$(nproc)"
exec build/cpu/backstop run "$@"

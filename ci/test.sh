#!/usr/bin/env bash
# Set-up, build with coverage, run every test through ctest, print the lcov
# summary and fail under the coverage floor.
set -euo pipefail
cd "$(dirname "$0")/.."
FLOOR=${BS_COVERAGE_FLOOR:-90}
jobs=$(nproc)

ci/setup.sh
# The code is formatted by the repo's .clang-format.
if command -v clang-format >/dev/null; then
  git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run -Werror
else
  echo "ci/test.sh: clang-format not found: format check skipped"
fi
# gcc and clang warn about different things; both must stay -Werror clean.
if command -v clang >/dev/null; then
  cmake --preset clang >/dev/null
  cmake --build --preset clang -j "$jobs"
else
  echo "ci/test.sh: clang not found: clang build skipped"
fi
# The configuration without fault points (BS_FIU=OFF) builds and passes:
# scenarios and tests that need faults say they are skipped.
cmake --preset nofiu >/dev/null
cmake --build --preset nofiu -j "$jobs"
ctest --preset nofiu -j "$jobs"
cmake --preset coverage >/dev/null
cmake --build --preset coverage -j "$jobs"
lcov --quiet --zerocounters --directory build/coverage
ctest --preset coverage -j "$jobs"

# Coverage of core/ and kernels/. GPU-only sources (cuda/ folders, the NCCL
# backend) cannot run on a machine without a GPU and are left out.
info=build/coverage/coverage.info
lcov --quiet --capture --directory build/coverage --output-file "$info.raw" \
  --rc lcov_branch_coverage=0 2>/dev/null
lcov --quiet --extract "$info.raw" "$PWD/core/*" "$PWD/kernels/*" --output-file "$info"
lcov --quiet --remove "$info" '*/cuda/*' '*_nccl.c' --output-file "$info"
lcov --summary "$info" --fail-under-lines "$FLOOR"

#!/usr/bin/env bash
# Builds the asan (ASan+UBSan) and tsan presets and runs the tests under
# each: the core must stay clean under both, on scheduled worlds (the
# default: one rank at a time on virtual time) and on real threads (label
# slow: the suites' _threads tests, --schedule threads, and the core's own
# tests, whose worlds name no schedule: TSan sees races only where threads
# run at once). Left out: label repeat (test_cli_explore_slow's fuzz
# campaigns, suite_same_bytes's suites run twice, test_sched_world's 64
# busy threads), runs the other tests make too; and under TSan label
# torch (dumps PyTorch writes now, scored: the dumps reader and replay
# that ASan checks on them, and TSan on the torch-written shapes of
# fr_shapes_check; 6 of TSan's 8 minutes, 2026-12-06). BS_SANITIZE_ALL=1
# runs them as well.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
ci/setup.sh --no-torch
for preset in ${BS_SANITIZERS:-asan tsan}; do
  echo "== $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  if [ "${BS_SANITIZE_ALL:-0}" = 1 ]; then
    ctest --preset "$preset" -j "$jobs"
  else
    skip=repeat
    [ "$preset" = tsan ] && skip='repeat|torch'
    ctest --preset "$preset" -j "$jobs" -LE "$skip"
  fi
done

#!/usr/bin/env bash
# Set-up, the format check, the clang and BS_FIU=OFF builds, then the build
# with coverage: every test through ctest, the lcov summary per part, and a
# failure under the coverage floor.
set -euo pipefail
cd "$(dirname "$0")/.."
FLOOR=${BS_COVERAGE_FLOOR:-92}
jobs=$(nproc)

ci/setup.sh
# setup.sh installs clang and clang-format: missing after it is a failure.
for tool in clang clang-format; do
  if ! command -v "$tool" >/dev/null; then
    echo "ci/test.sh: $tool not found after ci/setup.sh" >&2
    exit 1
  fi
done
# The code is formatted by the repo's .clang-format.
git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run -Werror
# gcc and clang warn about different things; both must stay -Werror clean.
cmake --preset clang >/dev/null
cmake --build --preset clang -j "$jobs"
# The configuration without fault points (BS_FIU=OFF) builds and passes:
# scenarios and tests that need faults say they are skipped. The tests
# labelled torch (PyTorch's own jobs and dumps, minutes of Python start-ups)
# use no fault point: the coverage build below runs them.
cmake --preset nofiu >/dev/null
cmake --build --preset nofiu -j "$jobs"
ctest --preset nofiu -j "$jobs" -LE torch

# The whole fault space on the fixed core: every reach of every scenario at
# 4 ranks (some 34,700 reaches, 69,400 runs, transient and persistent), no
# sample, on the optimised build just made (clang's: not under coverage),
# measured as backstop bench --campaigns measures it, beside the default
# suite's wall time and fuzz's runs judged a minute (30 s of seed 1): some
# 6 minutes on the 2-core machine (docs/performance.md). No reach may fail
# or be vacuous, and fuzz may find nothing unexplained: the bench exits 1
# otherwise. ctest's suite_sweep is a 1% sample at 2 ranks.
echo "ci/test.sh: the full sweep (every scenario at 4 ranks), fuzz, the suite"
build/clang/backstop bench --campaigns --fuzz-s 30 --json build/campaigns.json
# The whole kill matrix (every mutant against every scenario of
# @mutant-target, ordering ones through explored schedules): ctest's
# suite_mutants runs each mutant against its targeting scenarios only.
echo "ci/test.sh: the whole kill matrix"
sh tests/mutants_killed.sh build/clang/backstop
# The labeled hang corpus (docs/hang-report.md): 500 programs of 4-512
# ranks on the sim, analyze and replay of each against its truth, every
# --graph through dot -Tsvg and --trace by the trace rules; a miss prints
# its seed and program. (ctest's fr_torch_corpus runs 30 under PyTorch.)
echo "ci/test.sh: hang corpus, 500 programs of seed 1"
build/clang/backstop bench --hangs 500 --seed 1 --check

# The unit tests' JUnit XML goes to build/coverage/junit/.
cmake --preset coverage -DBS_UNIT_JUNIT=ON >/dev/null
cmake --build --preset coverage -j "$jobs"
lcov --quiet --zerocounters --directory build/coverage
ctest --preset coverage -j "$jobs"

# Line coverage of every part the product is made of, forked children
# included (bs_fork_exit writes their counts). GPU-only sources (cuda/
# folders, the NCCL backend) cannot run on a machine without a GPU and are
# left out. Each part must reach the floor.
info=build/coverage/coverage.info
lcov --quiet --capture --directory build/coverage --output-file "$info.raw" \
  --rc lcov_branch_coverage=0 2>/dev/null
lcov --quiet --remove "$info.raw" '*/cuda/*' '*/nccl/*' --output-file "$info"
low=""
for part in core kernels faults harness; do
  lcov --quiet --extract "$info" "$PWD/$part/*" --output-file "$info.$part"
  lines=$(lcov --summary "$info.$part" 2>&1 | grep -o 'lines\.*: [0-9.]*%')
  echo "coverage $part: $lines"
  lcov --summary "$info.$part" --fail-under-lines "$FLOOR" >/dev/null 2>&1 ||
    low="$low $part"
done
if [ -n "$low" ]; then
  echo "ci/test.sh: line coverage under ${FLOOR}% in:$low" >&2
  exit 1
fi

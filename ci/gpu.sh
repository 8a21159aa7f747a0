#!/usr/bin/env bash
# The GPU runner: the one script run on the H200 machine (issue 6). That
# machine has no network, so libfiu and CMocka come as .deb files in ./.debs
# (fetched beforehand with `apt-get download libfiu0 libfiu-dev libcmocka0
# libcmocka-dev`), unpacked into a private prefix instead of installed.
#
# Steps: nvidia-smi, unpack, configure (default preset; CUDA and NCCL must
# be found), build, every ctest test (GPU ones included), the default suite
# with --device cuda and with --backend nccl --ranks 1, with 2 or more GPUs
# the suite and fault scenarios over NCCL at 2, 4 and 8 ranks, the same in
# processes under mpirun (--rendezvous), backstop bench on cuda (and with
# --ranks over every GPU), nvidia-smi again. A failing test or run does not stop the later
# steps (device time is scarce); the exit status is 1 if any step failed.
# Every step's log is tee'd to $OUT/<step>.log when OUT is set (else to
# /tmp/bs_gpu_logs), the JSON/JUnit reports and bench.json next to them.
#
# Knobs: BS_DEPS (prefix, default /tmp/bsdeps), BS_CTEST_JOBS (default
# nproc), BS_BENCH_ARGS (extra bench options, e.g. "--gb 8 --repeat 5").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

deps=${BS_DEPS:-/tmp/bsdeps}
build=build/default # the default preset's binaryDir
logs=${OUT:-/tmp/bs_gpu_logs}
failed=()
hints=()

export NCCL_NVLS_ENABLE=0 # NVLink multicast: off on the lent machines
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$logs" || exit 1

# step NAME TIMEOUT_S CMD...: CMD (a program, or a function of this script,
# which runs without the time limit) with its output tee'd to NAME.log.
# Records a failure and returns its status instead of stopping.
step() {
  local name=$1 limit=$2 rc=0
  shift 2
  echo "=== $name: $*"
  if declare -F "$1" >/dev/null; then
    "$@" 2>&1 | tee "$logs/$name.log" || rc=$?
  else
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logs/$name.log" ||
      rc=$?
  fi
  echo "=== $name: exit $rc"
  [ "$rc" -eq 0 ] || failed+=("$name (exit $rc)")
  return "$rc"
}

unpack_debs() {
  local debs=(.debs/*.deb)
  if [ ! -e "${debs[0]}" ]; then
    echo "no .debs/*.deb: relying on the system's libfiu and CMocka"
    return 0
  fi
  rm -rf "$deps" && mkdir -p "$deps" || return 1
  for deb in "${debs[@]}"; do
    echo "dpkg -x $deb $deps"
    dpkg -x "$deb" "$deps" || return 1
  done
}

# The first file or link of that name under the prefix, or nothing.
find_dep() {
  find "$deps" \( -type f -o -type l \) -name "$1" 2>/dev/null | sort |
    head -n 1
}

# The -D values for CMakeLists.txt's find_library/find_path calls (FIU_LIB,
# FIU_INCLUDE, CMOCKA_LIB, CMOCKA_INCLUDE) and the runtime library path.
dep_hints() {
  local fiu_lib cmocka_lib fiu_h cmocka_h dir
  fiu_lib=$(find_dep libfiu.so)
  cmocka_lib=$(find_dep libcmocka.so)
  fiu_h=$(find_dep fiu.h)
  cmocka_h=$(find_dep cmocka.h)
  hints=(-DCMAKE_PREFIX_PATH="$deps/usr")
  [ -n "$fiu_lib" ] && hints+=(-DFIU_LIB="$fiu_lib")
  [ -n "$fiu_h" ] && hints+=(-DFIU_INCLUDE="$(dirname "$fiu_h")")
  [ -n "$cmocka_lib" ] && hints+=(-DCMOCKA_LIB="$cmocka_lib")
  [ -n "$cmocka_h" ] && hints+=(-DCMOCKA_INCLUDE="$(dirname "$cmocka_h")")
  for lib in "$fiu_lib" "$cmocka_lib"; do
    [ -n "$lib" ] || continue
    dir=$(dirname "$lib")
    case ":${LD_LIBRARY_PATH:-}:" in
    *":$dir:"*) ;;
    *) export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
  done
  echo "cmake hints: ${hints[*]}"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
}

# A CPU-only build would make every later step meaningless.
require_gpu_backends() {
  if ! grep -q 'backstop: cuda=ON nccl=ON' "$logs/configure.log"; then
    echo "ci/gpu.sh: CUDA or NCCL not found by cmake: no GPU run" >&2
    return 1
  fi
}

# The reports of one `backstop run`, next to its log.
reports() {
  rep=(--json "$logs/$1.json" --junit "$logs/$1.xml"
    --artifacts "$logs/$1-artifacts")
}

step nvidia-smi 60 nvidia-smi
step unpack 120 unpack_debs || exit 1
dep_hints >"$logs/deps.log" && cat "$logs/deps.log"
step configure 300 cmake --preset default "${hints[@]}" || exit 1
step gpu-backends 10 require_gpu_backends || exit 1
step build 540 cmake --build --preset default -j "$(nproc)" || exit 1
step ctest 540 ctest --preset default -j "${BS_CTEST_JOBS:-$(nproc)}"
reports run-cuda
step run-cuda 300 "$build/backstop" run --device cuda "${rep[@]}"
reports run-nccl
step run-nccl 300 "$build/backstop" run --backend nccl --ranks 1 "${rep[@]}"
# Several GPUs (issue 7): the suite and the fault scenarios over NCCL, one
# thread per GPU, at every power of two up to the GPUs there are; the real
# NCCL hangs (rank-divergence, rank-death) must be contained by the watchdog.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
sizes=""
for n in 2 4 8; do [ "$n" -le "$gpus" ] && sizes="$sizes${sizes:+,}$n"; done
if [ -n "$sizes" ]; then
  reports run-nccl-multi
  step run-nccl-multi 540 "$build/backstop" run @smoke @fault \
    --backend nccl --device cuda --ranks "$sizes" "${rep[@]}"
else
  echo "=== run-nccl-multi: skipped: $gpus GPU(s) visible, needs 2"
fi
# Process per rank under mpirun (issue 7): one process at one rank here; with
# several GPUs, two processes over every size (threads within each) and one
# process per GPU. Process 0 merges the records, judges and reports.
mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpirun --oversubscribe)
# procs NAME NP ARGS...: `backstop run ARGS` in NP processes under mpirun.
procs() {
  local name=$1 np=$2
  shift 2
  reports "$name"
  step "$name" 540 "${mpi[@]}" -np "$np" "$build/backstop" run "$@" \
    --backend nccl --device cuda --rendezvous "$logs/$name-rendezvous" \
    "${rep[@]}"
}
if command -v mpirun >/dev/null; then
  procs run-nccl-procs 1 --ranks 1
  if [ -n "$sizes" ]; then
    procs run-nccl-procs-2 2 @smoke @fault --ranks "$sizes"
    procs run-nccl-procs-each "$gpus" @smoke @fault --ranks "$gpus"
  fi
else
  echo "=== run-nccl-procs: skipped: no mpirun"
fi
# shellcheck disable=SC2086 # BS_BENCH_ARGS is a list of options
step bench 540 "$build/backstop" bench --device cuda \
  --json "$logs/bench.json" ${BS_BENCH_ARGS:-}
# MainCast's all-gather across every GPU (issue 7): its bus bandwidth
# against a bare all-gather of the same bytes, one rank per GPU over NCCL.
if [ "$gpus" -ge 2 ]; then
  # shellcheck disable=SC2086 # BS_BENCH_ARGS is a list of options
  step bench-ranks 540 "$build/backstop" bench --device cuda --ranks "$gpus" \
    --json "$logs/bench_ranks.json" ${BS_BENCH_ARGS:-}
else
  echo "=== bench-ranks: skipped: $gpus GPU(s) visible, needs 2"
fi
step nvidia-smi-after 60 nvidia-smi

if [ ${#failed[@]} -gt 0 ]; then
  echo "ci/gpu.sh: failed: ${failed[*]}" | tee "$logs/summary.txt"
  exit 1
fi
echo "ci/gpu.sh: every step passed" | tee "$logs/summary.txt"

#!/usr/bin/env bash
# The GPU runner: the one script run on a GPU machine. That machine has no
# network, so libfiu and CMocka come as .deb files in ./.debs (fetched
# beforehand with `apt-get download libfiu0 libfiu-dev libcmocka0
# libcmocka-dev`), unpacked into a private prefix instead of installed.
#
# Several NCCL ranks on one GPU need NCCL >= 2.30 (NCCL_MULTI_RANK_GPU_ENABLE
# is set by backstop itself): BS_NCCL when set, else the prebuilt library of
# ../shared/nccl (build.sh), else one carried in ./.nccl (the same files).
#
# Steps (BS_GPU_STEPS, default all, in this order):
#   build     nvidia-smi, unpack, configure (CUDA and NCCL must be found), build
#   ctest     every ctest test (GPU ones included)
#   cuda      the default suite with --device cuda; --backend nccl --ranks 1
#   suite     every scenario over NCCL at 2, 4 and 8 ranks (one process per
#             rank, all on the GPUs there are: backstop starts them)
#   mutants   the kill matrix over NCCL at 4 ranks (--targeted)
#   agree     rank-death at 4 and 8 ranks, 20 times each: one verdict
#   launcher  the fault scenarios under mpirun, one process per rank
#   refusal   a launcher that gives a process two ranks of one GPU: refused
#   replay    every job of tests/data/fr (PyTorch's NCCL and torch dumps:
#             several groups, p2p, coalesced ops, cycles, several roots) and
#             a failing run's artifacts at 8 ranks replayed on the sim and
#             over NCCL (a process per rank): the same exit and roots on
#             both (replay-roots.txt), the culprits of the jobs' truth
#   detect    bench --detect: desync and rank-death containment over NCCL,
#             beside PyTorch's figures (the peer script) in the same run
#   bench     backstop bench on cuda (and --ranks over every GPU)
#   frdumps   real PyTorch (ProcessGroupNCCL) Flight Recorder dumps of hung
#             and diverged 4-rank jobs (ci/fr_nccl_dumps.py), packed in
#             $OUT/frdumps.tar.gz (tests/data/fr/nccl and nccl-json)
#   gate      the merge gate in one step (not in the default steps): the
#             suite at 2, 4 and 8 ranks, the mutant matrix at 4 and 8,
#             rank-death x20 at 4 and 8; one verdict, one JUnit file
#             (gate.xml), the wall time of each part and where each part's
#             process time went (BS_SPANS: process start, CUDA context,
#             communicator creation per kind, engines, teardown) in gate.txt
# A failing step does not stop the later ones (device time is scarce); the
# exit status is 1 if any failed. Logs go to $OUT/<step>.log when OUT is
# set (else /tmp/bs_gpu_logs), with the JSON/JUnit reports beside them.
#
# Knobs: BS_DEPS (prefix, default /tmp/bsdeps), BS_CTEST_JOBS (default
# nproc), BS_GPU_JOBS (runs in parallel in the NCCL steps, default 2),
# BS_CTEST_REGEX (only the ctest tests it matches), BS_SUITE_SEL and
# BS_SUITE_RANKS (the suite step's selectors, default '*', and sizes,
# default 2,4,8), BS_AGREE_REPEAT (default 20) and BS_AGREE_CYCLES
# (default: the scenario's), BS_DETECT_RUNS (default 10),
# BS_BENCH_ARGS (extra bench options, e.g. "--gb 8 --repeat 5").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

deps=${BS_DEPS:-/tmp/bsdeps}
build=build/default # the default preset's binaryDir
B=$build/backstop
logs=${OUT:-/tmp/bs_gpu_logs}
steps=${BS_GPU_STEPS:-build ctest cuda suite mutants agree launcher refusal replay detect bench}
jobs=${BS_GPU_JOBS:-2}
failed=()
hints=()

export NCCL_NVLS_ENABLE=0 # NVLink multicast: off on the lent machines
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$logs" || exit 1

wanted() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

# step NAME TIMEOUT_S CMD...: CMD (a program, or a function of this script,
# which runs without the time limit) with its output tee'd to NAME.log.
# Records a failure and returns its status instead of stopping.
step() {
  local name=$1 limit=$2 rc=0 t0=$SECONDS
  shift 2
  echo "=== $name: $*"
  if declare -F "$1" >/dev/null; then
    "$@" 2>&1 | tee "$logs/$name.log" || rc=$?
  else
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logs/$name.log" ||
      rc=$?
  fi
  echo "=== $name: exit $rc ($((SECONDS - t0)) s)"
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

# An NCCL that runs several ranks on one GPU, in BS_NCCL (empty: none).
find_nccl() {
  local src
  [ -n "${BS_NCCL:-}" ] && return 0
  for src in ../shared/nccl .nccl; do
    if [ -x "$src/build.sh" ] && ls "$src"/libnccl-*.so.xz >/dev/null 2>&1; then
      bash "$src/build.sh" /tmp/bs_nccl >/dev/null &&
        export BS_NCCL=/tmp/bs_nccl/lib && return 0
    fi
  done
  echo "no NCCL >= 2.30 found (BS_NCCL, ../shared/nccl, .nccl): ranks" \
    "sharing a GPU will be refused"
}

# The peer script of ../shared/peers (or carried in .nccl), or nothing.
find_peer() {
  local p
  for p in ../shared/peers/torch_nccl_peer.py .nccl/torch_nccl_peer.py; do
    [ -r "$p" ] && echo "$p" && return 0
  done
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

# Several processes of one backstop command under mpirun.
mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpirun --oversubscribe -x LD_LIBRARY_PATH -x BS_NCCL -x NCCL_NVLS_ENABLE)

# rank-death 20 times at 4 and 8 ranks: every run must pass (one verdict,
# the dead rank named, every survivor rank-dead).
agree_repeated() {
  reports agree
  "$B" run rank-death --backend nccl --ranks 4,8 \
    --repeat "${BS_AGREE_REPEAT:-20}" ${BS_AGREE_CYCLES:+--cycles "$BS_AGREE_CYCLES"} \
    -j "$jobs" -q "${rep[@]}"
}

# A launcher that hands each process two ranks of one GPU must be refused
# before anything runs (exit 2, the message naming the process mode).
launcher_refusal() {
  local out rc
  out=$(BS_JOB_ID=refuse BS_PROC_RANK=0 BS_PROC_SIZE=1 "$B" run steady-normal \
    --backend nccl --ranks 2 --rendezvous /tmp/bs_refuse 2>&1)
  rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] && grep -q 'one process per rank' <<<"$out"
}

# The verdict and roots of one replay's --json (what the simulator and NCCL
# must agree on): the verdict, each root's rank, kind, group and op, the
# wait cycles. Not whether the run reproduced the dumps: NCCL completes a
# small send whose recv was never posted (it lands in the peer's buffer),
# where gloo's and the sim's wait, so a p2p hang can stop one op later over
# NCCL; replay then gives the dumps' own verdict, with the same roots.
roots_of() {
  grep -o '"verdict": "[a-z_]*"' "$1" | head -n 1
  sed -n '/^ "roots"/,/^ "stuck"/p' "$1" |
    grep -o '{"rank": [0-9]*, "kind": "[a-z_]*", "group": "[^"]*", "desc": "[^"]*", "op": -\?[0-9]*, "p2p": [a-z]*'
  grep '^ "cycles"' "$1"
}

# replay_agrees DIR [CULPRIT]: DIR's dumps replayed on the simulator and
# over NCCL (a process per rank) exit alike and name the same roots (each
# in replay-roots.txt with the NCCL replay's time); over NCCL the culprit
# line names CULPRIT where given, as analyze does.
replay_agrees() {
  local be rc t0 tmp=/tmp/bs_replay_roots ok=0
  mkdir -p "$tmp" || return 1
  for be in sim nccl; do
    rm -f "$tmp/$be.json"
    t0=$(date +%s%N)
    "$B" replay "$1" --backend "$be" --json "$tmp/$be.json" >"$tmp/$be.txt" 2>&1
    rc=$?
    echo "$rc $((($(date +%s%N) - t0) / 1000000)) ms" >"$tmp/$be.rc"
    roots_of "$tmp/$be.json" >"$tmp/$be.roots" 2>/dev/null
  done
  echo "--- $1: sim exit $(cat "$tmp/sim.rc"), nccl exit $(cat "$tmp/nccl.rc")"
  cat "$tmp/nccl.txt"
  {
    echo "$1: sim exit $(cat "$tmp/sim.rc"); nccl exit $(cat "$tmp/nccl.rc")"
    grep -o '"reproduced": [a-z]*' "$tmp/nccl.json" | sed 's/^/  nccl /'
    sed 's/^/  /' "$tmp/nccl.roots"
  } >>"$logs/replay-roots.txt"
  if [ "$(cut -d' ' -f1 "$tmp/sim.rc")" != "$(cut -d' ' -f1 "$tmp/nccl.rc")" ]; then
    echo "FAIL $1: the exit statuses differ"
    ok=1
  fi
  if ! [ -s "$tmp/nccl.roots" ] || ! diff "$tmp/sim.roots" "$tmp/nccl.roots"; then
    echo "FAIL $1: the roots differ (< sim, > nccl)"
    ok=1
  fi
  if [ -n "${2:-}" ] && ! grep -qF "  culprit: $2 (" "$tmp/nccl.txt"; then
    echo "FAIL $1: no culprit $2 over NCCL"
    ok=1
  fi
  if [ "$ok" -ne 0 ]; then
    echo "$1: FAIL" >>"$logs/replay-roots.txt"
    echo "--- $1 on the sim:" # beside NCCL's above
    cat "$tmp/sim.txt"
  fi
  return "$ok"
}

# Every job of tests/data/fr (PyTorch's NCCL dumps of nccl/, the torch
# ones), then a failing run's artifacts at 8 ranks: the same roots over
# NCCL as on the simulator, and the culprits of the jobs' truth.
replays() {
  local art=$logs/replay-artifacts d rc=0
  local -A culprit=([desync4]="ranks 1,3" [nccl/groups]="rank 3"
    [nccl/p2p]="rank 2" [nccl/coalesced]="rank 1" [nccl/a2a]="rank 2"
    [nccl/batch]="rank 1" [torch-gather]="rank 2" [torch-ring]="rank 1"
    [torch-pipeline]="rank 2" [torch-pipeline_1f1b]="rank 2")
  : >"$logs/replay-roots.txt"
  for d in tests/data/fr/desync* tests/data/fr/nccl/* tests/data/fr/torch-*; do
    case $d in *-json | *.md) continue ;; esac
    [ -d "$d" ] || continue
    replay_agrees "$d" "${culprit[${d#tests/data/fr/}]:-}" || rc=1
  done
  "$B" run frozen-params --mutant skip-frozen-backup --ranks 8 -q \
    --artifacts "$art"
  replay_agrees "$art/frozen-params-r8-s0-skip-frozen-backup" "ranks 1,3,5,7" ||
    rc=1
  echo "replay: $(grep -c ': sim exit' "$logs/replay-roots.txt") jobs," \
    "$(grep -c ': FAIL' "$logs/replay-roots.txt") failed," \
    "$(grep -c 'nccl "reproduced": false' "$logs/replay-roots.txt")" \
    "not reproduced by the NCCL run (the dumps' verdict given)" |
    tee -a "$logs/replay-roots.txt"
  return "$rc"
}

# frdumps KIND...: each KIND of ci/fr_nccl_dumps.py at 4 ranks on GPU 0.
fr_dumps() {
  local kind dir=/tmp/bs_frdumps rc=0
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  for kind in "$@"; do
    echo "--- $kind"
    LD_PRELOAD=${BS_NCCL:+$BS_NCCL/libnccl.so.2} NCCL_MULTI_RANK_GPU_ENABLE=1 \
      TORCH_FR_BUFFER_SIZE=2000 timeout -k 5 90 torchrun --standalone \
      --nproc-per-node 4 ci/fr_nccl_dumps.py "$kind" "$dir/nccl/$kind" \
      "$dir/nccl-json/$kind" || rc=1
  done
  tar czf "$logs/frdumps.tar.gz" -C "$dir" . && ls -lR "$dir" | head -80
  return "$rc"
}

# gate_part NAME CMD...: one part of the gate, its spans in gate-NAME.spans
# (one line per process: the totals of bs_span.h) and its wall time.
gate_part() {
  local name=$1 t0=$SECONDS rc=0
  shift
  rm -rf "$logs/gate-$name.spans" && mkdir -p "$logs/gate-$name.spans"
  BS_SPANS="$logs/gate-$name.spans" "$@" >"$logs/gate-$name.log" 2>&1 || rc=$?
  tail -n 3 "$logs/gate-$name.log"
  grep -h 'rank pool: .* runs on' "$logs/gate-$name.log" | sed "s/^/$name: /" |
    tee -a "$logs/gate.txt"
  cat "$logs/gate-$name.spans"/spans.* 2>/dev/null |
    awk -v part="$name" -v rc="$rc" -v wall=$((SECONDS - t0)) '
      { n[$1] += $2; t[$1] += $3 / 1e9 }
      END {
        printf "%-10s exit %d  wall %4d s  process-seconds:", part, rc, wall
        split("proc_start cuda_ctx comm_init comm_wake comm_temp comm_other comm_destroy engine_start lifecycle teardown init train_step sleep update_weights restart_engine wake_up restore", k, " ")
        for (i = 1; i in k; i++) if (k[i] in t) printf " %s %.1f (%d)", k[i], t[k[i]], n[k[i]]
        printf "\n"
      }' | tee -a "$logs/gate.txt"
  [ "$rc" -eq 0 ] || gate_failed+=("$name")
}

# The gate's JUnit files as one (gate.xml): every part's <testsuite>s under
# one <testsuites>.
gate_junit() {
  local f
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo '<testsuites name="backstop-gpu-gate">'
    for f in "$@"; do
      [ -s "$f" ] && sed -e '/^<?xml/d' -e '/<\/\?testsuites[ >]/d' "$f"
    done
    echo '</testsuites>'
  } >"$logs/gate.xml"
}

# BS_GATE_JOBS (-j, default 4: runs on a shared GPU still go one at a
# time, bs_nccl_plan.h), BS_GATE_MPS=0 (no MPS), BS_GATE_PARTS (default all four) and BS_GATE_SEL/BS_GATE_RANKS (the suite
# part's selectors and sizes) narrow it for a measurement; BS_GATE_POOL=0
# starts every run's rank processes afresh (default: the rank pool,
# harness/run/bs_pool.h), BS_GATE_TEARDOWN=abort tears communicators down
# as torch 2.3-2.5 did (default finalize, torch >= 2.6; docs/multi-gpu.md).
gate() {
  local t0=$SECONDS r=(--backend nccl -j "${BS_GATE_JOBS:-4}" -q) part n mps=""
  gate_failed=()
  export BS_RANK_POOL=${BS_GATE_POOL:-1} BS_NCCL_TEARDOWN=${BS_GATE_TEARDOWN:-finalize}
  : >"$logs/gate.txt"
  # CUDA MPS runs a run's ranks' kernels side by side (a quarter off the
  # suite's time on the H200): started here when the machine has it,
  # stopped after.
  if [ "${BS_GATE_MPS:-1}" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null &&
    nvidia-cuda-mps-control -d 2>/dev/null; then
    mps=started
  fi
  echo "gate: CUDA MPS ${mps:-not used}; rank pool ${BS_RANK_POOL}; teardown" \
    "${BS_NCCL_TEARDOWN}; ${r[*]}" | tee -a "$logs/gate.txt"
  for part in ${BS_GATE_PARTS:-suite mutants4 mutants8 agree}; do
    case $part in
    suite)
      # shellcheck disable=SC2086 # BS_GATE_SEL is a list of selectors
      gate_part suite "$B" run ${BS_GATE_SEL:-'*'} --ranks "${BS_GATE_RANKS:-2,4,8}" \
        "${r[@]}" --junit "$logs/gate-suite.xml" --json "$logs/gate-suite.json" ;;
    mutants*)
      n=${part#mutants}
      gate_part "$part" "$B" mutants --ranks "$n" --targeted "${r[@]}" \
        --json "$logs/gate-$part.json" ;;
    agree)
      gate_part agree "$B" run rank-death --ranks 4,8 --repeat "${BS_AGREE_REPEAT:-20}" \
        "${r[@]}" --junit "$logs/gate-agree.xml" --json "$logs/gate-agree.json" ;;
    esac
  done
  [ -n "$mps" ] && echo quit | nvidia-cuda-mps-control
  gate_junit "$logs/gate-suite.xml" "$logs/gate-agree.xml"
  echo "gate: ${#gate_failed[@]} part(s) failed${gate_failed[*]:+: ${gate_failed[*]}}; wall $((SECONDS - t0)) s" |
    tee -a "$logs/gate.txt"
  [ ${#gate_failed[@]} -eq 0 ]
}

dep_hints >"$logs/deps.log" && cat "$logs/deps.log"
find_nccl >"$logs/nccl.log" 2>&1
cat "$logs/nccl.log"
echo "BS_NCCL=${BS_NCCL:-}"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if wanted build; then
  step nvidia-smi 60 nvidia-smi
  step unpack 120 unpack_debs || exit 1
  dep_hints >"$logs/deps.log"
  step configure 300 cmake --preset default "${hints[@]}" || exit 1
  step gpu-backends 10 require_gpu_backends || exit 1
  step build 540 cmake --build --preset default -j "$(nproc)" || exit 1
fi
wanted ctest && step ctest 540 ctest --preset default \
  -j "${BS_CTEST_JOBS:-$(nproc)}" ${BS_CTEST_REGEX:+-R "$BS_CTEST_REGEX"}
if wanted cuda; then
  reports run-cuda
  step run-cuda 300 "$B" run --device cuda "${rep[@]}"
  reports run-nccl
  step run-nccl 300 "$B" run --backend nccl --ranks 1 "${rep[@]}"
fi
if wanted suite; then
  reports suite-nccl
  # shellcheck disable=SC2086 # BS_SUITE_SEL is a list of selectors
  step suite-nccl 590 "$B" run ${BS_SUITE_SEL:-'*'} --backend nccl \
    --ranks "${BS_SUITE_RANKS:-2,4,8}" -j "$jobs" "${rep[@]}"
fi
if wanted mutants; then
  step mutants-nccl 590 "$B" mutants --backend nccl --ranks 4 --targeted \
    -j "$jobs" --json "$logs/mutants-nccl.json"
fi
wanted agree && step agree 590 agree_repeated
if wanted launcher && command -v mpirun >/dev/null; then
  n=$((gpus >= 4 ? gpus : 4))
  reports launcher
  step launcher 540 "${mpi[@]}" -np "$n" "$B" run @fault --backend nccl \
    --ranks "$n" --rendezvous "$logs/launcher-rendezvous" "${rep[@]}"
fi
wanted refusal && step launcher-refusal 60 launcher_refusal
wanted replay && step replay 300 replays
if wanted detect; then
  peer=$(find_peer)
  # The peer runs on BS_NCCL's library too (bench preloads it for torchrun).
  step detect 540 "$B" bench --detect "${BS_DETECT_RUNS:-10}" --backend nccl \
    --ranks 4 ${peer:+--peer "$peer"} --json "$logs/detect.json"
fi
if wanted bench; then
  # shellcheck disable=SC2086 # BS_BENCH_ARGS is a list of options
  step bench 540 "$B" bench --device cuda --json "$logs/bench.json" \
    ${BS_BENCH_ARGS:-}
  if [ "$gpus" -ge 2 ]; then
    # shellcheck disable=SC2086
    step bench-ranks 540 "$B" bench --device cuda --ranks "$gpus" \
      --json "$logs/bench_ranks.json" ${BS_BENCH_ARGS:-}
  fi
fi
wanted frdumps && step frdumps 900 fr_dumps ${BS_FR_KINDS:-ok skip size op groups p2p coalesced nodump}
wanted gate && step gate 3600 gate

if [ ${#failed[@]} -gt 0 ]; then
  echo "ci/gpu.sh: failed: ${failed[*]}" | tee -a "$logs/summary.txt"
  exit 1
fi
echo "ci/gpu.sh: every step of '$steps' passed" | tee -a "$logs/summary.txt"

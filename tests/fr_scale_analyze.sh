#!/bin/sh
# analyze and replay of a large job's dumps, scaled from PyTorch's own
# (tests/fr_scale.py from tests/data/fr/nccl/groups: 256 ranks in TP pairs
# and two DP groups of 128; the last rank skips its DP all_reduce at #3):
# the odd ranks' DP group named by its members in the header (128 of them,
# a stride written as one: "1,3,...,255"), its stuck collective, the
# true culprit, exit 1; the replay names the same, on a scheduled world
# (BS_SCHEDULE=random: its watchdog's 500 ms pass on virtual time, not
# waited out; replays on real threads are fr_shapes_check's, label slow).
#   fr_scale_analyze.sh BACKSTOP PYTHON3
set -u
bs=$1
py=${2:-python3}
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/bs_frscale_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# -S: the standard library is all it needs (no site module to start).
"$py" -S "$here/fr_scale.py" "$here/data/fr/nccl/groups" "$tmp/d" 256 3 ||
  fail "fr_scale.py did not write the dumps"
"$bs" analyze "$tmp/d" >"$tmp/a.out" 2>&1
rc=$?
[ $rc = 1 ] || fail "analyze exit $rc: $(head -3 "$tmp/a.out")"
head -1 "$tmp/a.out" | grep -q '^backstop: hang at collective #3 (process group [0-9]* (undefined) of ranks 1,3,\.\.\.,255; 256 ranks, 256 dumps, ' ||
  fail "analyze header: $(head -1 "$tmp/a.out" | cut -c1-300)"
grep -q '^  culprit: rank 255 (missing from #3)$' "$tmp/a.out" &&
  grep -q '^  root: rank 255 stalled before all_reduce #3 of process group ' "$tmp/a.out" ||
  fail "analyze culprit: $(grep culprit "$tmp/a.out" | cut -c1-300)"
grep -q '^  ranks 1,3,\.\.\.,253: all_reduce #3 ' "$tmp/a.out" ||
  fail "analyze waiting ranks: $(grep all_reduce "$tmp/a.out" | cut -c1-300)"
echo "ok: analyze: the odd DP group of 128 ranks at #3, culprit rank 255"
BS_SCHEDULE=random "$bs" replay "$tmp/d" --timeout-ms 500 >"$tmp/r.out" 2>&1
rc=$?
[ $rc = 1 ] || fail "replay exit $rc: $(head -5 "$tmp/r.out" | cut -c1-300)"
[ "$(grep -c '^  culprit: rank 255 (missing from #3)$' "$tmp/r.out")" = 2 ] &&
  grep -q '^backstop replay: reproduced: ' "$tmp/r.out" ||
  fail "replay culprit: $(grep culprit "$tmp/r.out" | cut -c1-300)"
echo "ok: replay: culprit rank 255, in the world's report and read back (reproduced)"

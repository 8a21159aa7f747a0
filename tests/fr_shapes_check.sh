#!/bin/sh
# PyTorch's own dumps of the hang shapes issue 33 names and others
# (tests/data/fr/torch-<shape>/, made by tests/fr_torch_prog.py shapes,
# each with its truth.json): analyze, replay and replay --spawn name every
# root, its group and op (or the order deadlock's groups) as the truth
# says, exit 1 on every hung or diverged job and 0 on the clean one, and
# their --graph passes dot -Tsvg, their --trace the trace rules.
#   fr_shapes_check.sh BACKSTOP DATA
set -u
bs=$1
data=$2
tmp=$(mktemp -d /tmp/bs_frshapes_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

n=0
for truth in "$data"/torch-*/truth.json; do
  dir=$(dirname "$truth")
  job=$(basename "$dir")
  want=1
  grep -q '"verdict": "clean"' "$truth" && want=0
  for cmd in "analyze" "replay --timeout-ms 500" "replay --spawn --timeout-ms 500"; do
    # shellcheck disable=SC2086
    "$bs" $cmd "$dir" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = $want ] || fail "$job: $cmd: exit $rc, not $want: $(cat "$tmp/out" "$tmp/err")"
  done
  n=$((n + 1))
done
[ $n -ge 14 ] || fail "only $n shapes in $data"
echo "ok: $n shapes: analyze, replay and replay --spawn exit as their truth says"
# Roots, groups, ops against each truth.json; the pictures checked.
if command -v dot >/dev/null; then check=--check; else check=; fi
"$bs" bench --hangs 0 --score "$data" --spawn $check >"$tmp/score" 2>&1
rc=$?
cat "$tmp/score"
[ $rc = 0 ] || fail "a shape missed (above)"
grep -q "analyze: $n/$n " "$tmp/score" || fail "not $n shapes scored"
echo "ok: $n shapes scored in full${check:+, their graphs and traces checked}"

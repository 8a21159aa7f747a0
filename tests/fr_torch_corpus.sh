#!/bin/sh
# The corpus's programs (backstop bench --hangs: the same programs as the
# sim's, those of 16 ranks at most) run under PyTorch itself on gloo
# (tests/fr_torch_prog.py), and their dumps scored as the sim's are:
# analyze, replay and replay --spawn against each program's truth (exact
# roots, group, op, kind), their --graph through dot -Tsvg and --trace by
# the trace rules. A miss names the seed and program (its folder, s<seed>-
# p<index>) so that it reproduces alone:
#   backstop bench --hangs 1 --seed S --from I --keep DIR
#   PYTHON tests/fr_torch_prog.py run OUT DIR/sS-pI/program.json
#   fr_torch_corpus.sh BACKSTOP PYTHON [N [SEED]]
# PYTHON: one with torch; absent: skipped (exit 77).
set -u
bs=$1
py=${2:-}
n=${3:-30}
seed=${4:-7}
here=$(dirname "$0")
if [ -z "$py" ] || [ ! -x "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: no Python with torch (ci/setup.sh makes build/torch-venv)"
  exit 77
fi
tmp=$(mktemp -d /tmp/bs_frcorpus_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# About 2 in 7 programs have 16 ranks at most (log-uniform 4-512).
"$bs" bench --hangs $((n * 5)) --seed "$seed" --keep "$tmp/sim" \
  --keep-ranks 16 >"$tmp/sim.txt" 2>&1 ||
  fail "the sim's corpus: $(grep -e '^miss' -e '^  ' "$tmp/sim.txt")"
progs=$(ls "$tmp/sim" | sort -t p -k 3 -n | head -n "$n")
[ "$(echo "$progs" | wc -l)" = "$n" ] || fail "fewer than $n programs of 16 ranks"
set --
for p in $progs; do set -- "$@" "$tmp/sim/$p/program.json"; done
FR_PROG_WAIT_S=${FR_PROG_WAIT_S:-20} "$py" "$here/fr_torch_prog.py" run \
  "$tmp/torch" "$@" >"$tmp/torch.txt" 2>&1 ||
  fail "fr_torch_prog.py: $(grep -v Warn "$tmp/torch.txt" | tail -5)"
grep -q 'started again' "$tmp/torch.txt" &&
  echo "note: $(grep -c 'started again' "$tmp/torch.txt") start-ups retried (the store's port)"
"$bs" bench --hangs 0 --score "$tmp/torch" --spawn --check >"$tmp/score.txt" 2>&1
rc=$?
cat "$tmp/score.txt"
[ $rc = 0 ] || fail "torch-written programs missed (seed $seed; above)"
echo "ok: $n torch-written programs of seed $seed scored in full"

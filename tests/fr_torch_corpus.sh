#!/bin/sh
# The corpus's programs (backstop bench --hangs --max-ranks 16: the sim's
# generator, its world sizes drawn from 4 to 16) run under PyTorch itself on gloo
# (tests/fr_torch_prog.py), and their dumps scored as the sim's are:
# analyze, replay and replay --spawn against each program's truth (exact
# roots, group, op, kind), their --graph through dot -Tsvg and --trace by
# the trace rules. A miss names the seed and program (its folder, s<seed>-
# p<index>) so that it reproduces alone:
#   backstop bench --hangs 1 --seed S --from I --max-ranks 16 --keep DIR
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

# About 4 in 5 programs are ones gloo's dumps can show (below).
"$bs" bench --hangs $((n * 3)) --seed "$seed" --keep "$tmp/sim" \
  --max-ranks 16 >"$tmp/sim.txt" 2>&1 ||
  fail "the sim's corpus: $(grep -e '^miss' -e '^  ' "$tmp/sim.txt")"
# What torch 2.15's dumps cannot show is the sim's alone: gloo aborts a
# process whose collective's bytes differ from its peers' (another size,
# another op: gloo::EnforceNotMet, no dump left), and one whose element
# counts differ (2 x bf16 for 1 x fp32: its ring's chunks differ); the
# FlightRecorderHook marks a p2p op done when issued, so a ring that forgot
# entries pairs nothing (docs/hang-report.md). Ranks that left no dump (a
# death, a node's folder missing) are kept: their groups' members are
# read from the others' entries, the order torch makes groups in and the
# layouts of its loops (about a third of the programs kept).
progs=$("$py" -c '
import json, os, sys
d = sys.argv[1]
def torch_can(p, t):
    f = p["fault"]
    # A skip that lines another size or op up against a peer'"'"'s is the
    # same to gloo as "another size" (s7-p354: rank 6 skips op 5 and its
    # op 6 meets the others'"'"' op 5): only a shape mismatch runs there.
    same_bytes = ("shape", "dtype") if "as many elements" in f else ("shape",)
    bytes_differ = any(r.get("mismatch") not in (None,) + same_bytes
                       for r in t.get("roots", []))
    return not (bytes_differ or
                any(k in f for k in ("another size", "another op")) or
                ("another dtype" in f and "as many elements" not in f) or
                ("small rings" in f and p["p2p"]))
def read(n, f):
    return json.load(open(os.path.join(d, n, f)))
names = sorted(os.listdir(d), key=lambda n: int(n.split("-p")[1]))
ok = [n for n in names
      if torch_can(read(n, "program.json"), read(n, "truth.json"))]
print("\n".join(ok[:int(sys.argv[2])]))
' "$tmp/sim" "$n")
[ "$(echo "$progs" | wc -l)" = "$n" ] || fail "fewer than $n programs gloo can show"
set --
for p in $progs; do set -- "$@" "$tmp/sim/$p/program.json"; done
FR_PROG_WAIT_S=${FR_PROG_WAIT_S:-20} "$py" "$here/fr_torch_prog.py" run \
  "$tmp/torch" "$@" >"$tmp/torch.txt" 2>&1 ||
  fail "fr_torch_prog.py: $(grep -v Warn "$tmp/torch.txt" | tail -5)"
grep -q 'started again' "$tmp/torch.txt" &&
  echo "note: $(grep -c 'started again' "$tmp/torch.txt") start-ups retried (the store's port)"
grep -q 'ran again' "$tmp/torch.txt" &&
  echo "note: $(grep -c 'ran again' "$tmp/torch.txt") jobs ran again (a rank slower than FR_PROG_WAIT_S)"
"$bs" bench --hangs 0 --score "$tmp/torch" --spawn --check >"$tmp/score.txt" 2>&1
rc=$?
cat "$tmp/score.txt"
[ $rc = 0 ] || fail "torch-written programs missed (seed $seed; above)"
echo "ok: $n torch-written programs of seed $seed scored in full"

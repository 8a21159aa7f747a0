#!/bin/sh
# `backstop analyze` on Flight Recorder dumps PyTorch writes, made now by
# tests/fr_torch_gen.py (torch on CPU, 4 ranks a job), against how each
# job was built (its truth file): the status, the process group, the
# collective or p2p op, the culprit, the exit status, and `backstop
# replay` of each: the same collective and culprit; then the same dumps
# beside a log and a script, with one dump torn, and a folder with no
# dump at all.
#   fr_torch_analyze.sh BACKSTOP PYTHON
# PYTHON: one with torch; absent: skipped (exit 77).
set -u
bs=$1
py=${2:-}
here=$(dirname "$0")
if [ -z "$py" ] || [ ! -x "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: no Python with torch (ci/setup.sh makes build/torch-venv)"
  exit 77
fi
tmp=$(mktemp -d /tmp/bs_frtorch_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$py" "$here/fr_torch_gen.py" "$tmp/jobs" >"$tmp/gen.txt" 2>&1 ||
  fail "fr_torch_gen.py: $(tail -5 "$tmp/gen.txt")"

# The ranks of "culprit: rank 3 (" or "culprit: ranks 0,2-3 (", one a line.
culprits() {
  sed -n 's/^  culprit: ranks\{0,1\} \([0-9,-]*\) .*/\1/p' "$1" | head -1 |
    tr ',' '\n' |
    while IFS=- read -r a b; do [ -n "$a" ] && seq "$a" "${b:-$a}"; done
}

truth() { sed -n "s/^$1 //p" "$dir/truth"; }

check() { # job folder
  dir=$1
  job=$(basename "$dir")
  out=$tmp/$job.out
  "$bs" analyze "$dir" >"$out" 2>"$tmp/$job.err"
  rc=$?
  [ "$rc" = "$(truth exit)" ] ||
    fail "$job: exit $rc, not $(truth exit): $(cat "$out" "$tmp/$job.err")"
  status=$(truth status)
  if [ "$status" = clean ]; then
    grep -q '^backstop: no hang and no desync' "$out" ||
      fail "$job: not clean: $(cat "$out")"
    "$bs" replay "$dir" --timeout-ms 300 >"$out.replay" 2>&1 &&
      grep -q '^backstop: no hang and no desync' "$out.replay" ||
      fail "$job: replay not clean: $(cat "$out.replay")"
    echo "ok: $job: clean, exit 0 (analyze and replay)"
    return
  fi
  head -1 "$out" | grep -q "^backstop: $status at " ||
    fail "$job: not a $status: $(cat "$out")"
  group=$(truth group)
  [ "$group" = 0 ] || head -1 "$out" | grep -q "(process group $group " ||
    fail "$job: not process group $group: $(head -1 "$out")"
  members=$(truth members)
  [ -z "$members" ] || head -1 "$out" | grep -q " of ranks $members;" ||
    fail "$job: not members $members: $(head -1 "$out")"
  seq=$(truth seq)
  [ -z "$seq" ] || head -1 "$out" | grep -q " at collective #$seq " ||
    fail "$job: not collective #$seq: $(head -1 "$out")"
  op=$(truth op)
  [ -z "$op" ] || grep -q "^  ranks\{0,1\} [0-9,-]*: $op #$seq" "$out" ||
    fail "$job: no rank in $op #$seq: $(cat "$out")"
  kind=$(truth mismatch)
  [ -z "$kind" ] || grep -q "^  first mismatch: #$seq, $kind: " "$out" ||
    fail "$job: no $kind mismatch at #$seq: $(cat "$out")"
  p2p=$(truth p2p)
  [ -z "$p2p" ] || grep -q "^  rank $(truth waiting): $p2p " "$out" ||
    fail "$job: rank $(truth waiting) not in a $p2p: $(cat "$out")"
  # Another group held, back to its own root: its line whole.
  held=$(truth held)
  [ -z "$held" ] || grep -qxF "  held: $held" "$out" ||
    fail "$job: no line 'held: $held': $(cat "$out")"
  want=$(truth culprit)
  got=$(culprits "$out" | tr '\n' ',' | sed 's/,$//')
  [ "$got" = "$want" ] || fail "$job: culprit '$got', not $want: $(cat "$out")"
  echo "ok: $job: $status in group $group, culprit $want, exit $rc"
  replayed "$dir" "$seq" "$want" "$op"
}

# A replay's read-back of its flight recorders: up to its verdict line.
readback() {
  sed -n "/^the replayed ranks' flight recorders/,\$p" "$1" |
    sed '/^backstop replay: /,$d'
}

# A replay's read-back (after its first line) against analyze's report of
# the job's own dumps, the comm lib apart.
same_as_analyze() { # read-back, analyze's output
  sed -e 1d -e 's/comm lib [^)]*)/comm lib)/' "$1" >"$1.cmp"
  sed -e 's/comm lib [^)]*)/comm lib)/' "$2" >"$2.cmp"
  cmp -s "$1.cmp" "$2.cmp" || { diff "$2.cmp" "$1.cmp"; return 1; }
}

replayed() { # job folder, collective (empty: a p2p op), culprit, op
  job=$(basename "$1")
  out=$tmp/$job.replay
  "$bs" replay "$1" --timeout-ms 300 >"$out" 2>"$tmp/$job.replay.err"
  rc=$?
  [ $rc = 1 ] || fail "$job: replay exit $rc: $(cat "$out" "$tmp/$job.replay.err")"
  world=$(grep -m1 '^backstop: ' "$out")
  [ -z "$2" ] || echo "$world" | grep -q " at collective #$2 " ||
    fail "$job: replay not at #$2: $(cat "$out")"
  # The verdict: the read-back's, where the replay reproduced the dumps'
  # roots (as analyze reads the replayed flight recorders: every root,
  # where the world's own report names one group's), else the dumps'.
  back=$tmp/$job.back
  if grep -q '^backstop replay: reproduced: ' "$out"; then
    readback "$out" >"$back"
  else
    sed -n '/^backstop replay: not reproduced/,$p' "$out" >"$back"
  fi
  [ -s "$back" ] || fail "$job: no verdict: $(cat "$out")"
  got=$(culprits "$back" | tr '\n' ',' | sed 's/,$//')
  [ "$got" = "$3" ] || fail "$job: replay culprit '$got', not $3: $(cat "$out")"
  # The op by its recorded name, where the communicator has none of its
  # own (all_to_all, gather: a stand-in runs under that name).
  [ -z "$4" ] || [ -z "$2" ] || grep -q "^  ranks\{0,1\} [0-9,-]*: $4 #$2" "$back" ||
    fail "$job: read-back not in $4 #$2: $(cat "$out")"
  # A p2p hang: the replayed recorders read back as the job's dumps do,
  # each rank where analyze shows it (a ring's isend and irecv complete
  # apart, a recv whose send never comes holds up no other), in this
  # process and a process per rank.
  if [ -n "$(truth p2p)" ]; then
    same_as_analyze "$back" "$tmp/$job.out" || fail "$job: read-back differs"
    "$bs" replay "$1" --spawn --timeout-ms 300 >"$out.spawn" 2>&1
    readback "$out.spawn" >"$back.spawn"
    same_as_analyze "$back.spawn" "$tmp/$job.out" ||
      fail "$job: --spawn read-back differs"
  fi
  echo "ok: $job: replay at #${2:-p2p}, culprit $3, exit 1"
}

for dir in "$tmp"/jobs/*/; do
  check "${dir%/}"
done

# A folder as a job leaves it: a log of JSON lines and a script beside the
# dumps (skipped, named in one line), rank 2's pickle torn (unreadable:
# the others still read).
mixed=$tmp/mixed
cp -r "$tmp/jobs/skip" "$mixed"
printf '{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.4}\n' >"$mixed/train.log"
echo 'torchrun --nproc-per-node 4 train.py' >"$mixed/run.sh"
head -c 300 "$tmp/jobs/skip/rank_2" >"$mixed/rank_2"
"$bs" analyze "$mixed" >"$tmp/mixed.out" 2>"$tmp/mixed.err"
rc=$?
[ $rc = 1 ] || fail "mixed: exit $rc: $(cat "$tmp/mixed.out" "$tmp/mixed.err")"
[ "$(wc -l <"$tmp/mixed.err")" = 1 ] &&
  grep -q 'skipped 3 files .*run.sh, truth, train.log' "$tmp/mixed.err" ||
  fail "mixed: not one line naming the skipped files: $(cat "$tmp/mixed.err")"
grep -q '^  rank 2: dump unreadable (rank_2: pickle: ' "$tmp/mixed.out" ||
  fail "mixed: rank 2 not unreadable: $(cat "$tmp/mixed.out")"
culprits "$tmp/mixed.out" | grep -qx 3 ||
  fail "mixed: rank 3 not blamed: $(cat "$tmp/mixed.out")"
echo "ok: mixed: logs and scripts skipped in one line, rank 2 unreadable, rank 3 blamed"

# No dump at all: exit 2, never an all-clear.
mkdir "$tmp/none"
cp "$mixed/train.log" "$mixed/run.sh" "$tmp/none/"
"$bs" analyze "$tmp/none" >"$tmp/none.out" 2>&1
rc=$?
[ $rc = 2 ] || fail "none: exit $rc: $(cat "$tmp/none.out")"
echo "ok: none: exit 2 ($(head -1 "$tmp/none.out"))"

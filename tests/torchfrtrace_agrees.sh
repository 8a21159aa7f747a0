#!/bin/sh
# PyTorch's own analyzer reads a failing run's artifacts as they are and
# names the collective and the culprit Backstop's report names:
#   torchfrtrace_agrees.sh BACKSTOP [TORCHFRTRACE]
# TORCHFRTRACE: the argument, else $TORCHFRTRACE, else torchfrtrace on PATH;
# none: skipped (exit 77). Two runs: a desync with a majority (frozen-params
# with skip-frozen-backup on 5 ranks: ranks 1,3 hand the all-gather other
# sizes than ranks 0,2,4) and a hang (rank 3 stalls past the deadline; the
# dump is the parent's asking). torchfrtrace takes the first file it lists
# as right (the folder's order), so on a split it may blame the other side:
# then its culprits must be exactly the others, and its first file one of
# Backstop's culprits.
set -u
bs=$1
frt=${2:-${TORCHFRTRACE:-$(command -v torchfrtrace || true)}}
if [ -z "$frt" ] || [ ! -x "$frt" ]; then
  echo "SKIP: torchfrtrace not found (ci/setup.sh installs PyTorch when PyPI is reachable; or -DBS_TORCHFRTRACE=PATH)"
  exit 77
fi
tmp=$(mktemp -d /tmp/bs_frt_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The ranks of the first "rank 3", "ranks 0,2,4" or "ranks 0-2,5" in the
# line (before any reason in brackets), one a line.
ranks_of() {
  { sed 's/ (.*//' | sed -n 's/.*ranks\{0,1\} \([0-9][0-9,-]*\).*/\1/p' |
    head -1 | tr ',' '\n'; echo; } |
    while IFS=- read -r a b; do [ -n "$a" ] && seq "$a" "${b:-$a}"; done |
    sort -n
}

check() { # name, then the run's arguments
  name=$1
  shift
  art=$tmp/$name
  "$bs" run "$@" --artifacts "$art" -q >"$tmp/run.txt" 2>&1
  if [ $? -eq 2 ] && grep -q "no fault points" "$tmp/run.txt"; then
    echo "skip: $name: this build has no fault points (BS_FIU=OFF)"
    return
  fi
  dir=$(ls -d "$art"/*/ | head -1)
  [ -f "$dir/rank_0" ] || fail "$name: no rank_0 pickle in $dir"
  report=$dir/report.txt
  seq_bs=$(sed -n 's/^backstop: [a-z-]* at collective #\([0-9]*\).*/\1/p' "$report")
  grep '^  culprit:' "$report" | ranks_of >"$tmp/bs.txt"
  out=$tmp/$name.frt
  "$frt" "$dir" >"$out" 2>&1 || fail "$name: torchfrtrace failed: $(tail -3 "$out")"
  seq_t=$(sed -n 's/.*[Ss]equence number: \([0-9]*\).*/\1/p' "$out" | head -1)
  [ "$seq_t" = "$seq_bs" ] ||
    fail "$name: torchfrtrace names #$seq_t, Backstop's report #$seq_bs: $(cat "$out")"
  if grep -q 'missing ranks:' "$out"; then
    grep 'missing ranks:' "$out" | head -1 | sed 's/[{}]//g; s/missing ranks:/ranks/' |
      ranks_of >"$tmp/t.txt"
  else
    grep -o 'Culprit rank [0-9]*' "$out" | sed 's/Culprit //' | tr '\n' ',' |
      sed 's/^/ranks /; s/rank //g; s/,$//' | ranks_of >"$tmp/t.txt"
  fi
  if cmp -s "$tmp/bs.txt" "$tmp/t.txt"; then
    echo "ok: $name: #$seq_bs, culprit $(tr '\n' ' ' <"$tmp/bs.txt")(both)"
    return
  fi
  # The other side: torchfrtrace started from one of Backstop's culprits.
  n=$("$bs" analyze "$dir" | sed -n 's/^backstop: .*(\([0-9]*\) ranks.*/\1/p')
  seq 0 $((n - 1)) | grep -vxF -f "$tmp/bs.txt" >"$tmp/others.txt"
  first=$(sed -n 's/^input sizes: //p' "$out" | head -1)
  bad=$("$bs" analyze "$dir" | sed -n 's/^  first mismatch: #[0-9]*, [a-z]*: \(\[[^ ]*\]\) .*/\1/p')
  cmp -s "$tmp/others.txt" "$tmp/t.txt" && [ "$first" = "$bad" ] ||
    fail "$name: torchfrtrace blames $(tr '\n' ' ' <"$tmp/t.txt"), Backstop $(tr '\n' ' ' <"$tmp/bs.txt"): $(cat "$out")"
  echo "ok: $name: #$seq_bs, culprit $(tr '\n' ' ' <"$tmp/bs.txt")(torchfrtrace took a culprit's file, $first, as right and blames the others)"
}

check desync frozen-params --mutant skip-frozen-backup --ranks 5
check hang steady-normal --ranks 4 --fault name=comm/stall,rank=3,nth=3,failinfo=60000 \
  --timeout-ms 100000 --deadline-s 2

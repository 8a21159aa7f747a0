#!/usr/bin/env bash
# Behaviour unchanged across a refactor: builds backstop (optimised, no
# CUDA) at each of two revisions in a worktree of its own, runs with each
# the default suite, every fault scenario (@fault), one fuzz seed, a sweep
# sample, and analyze and replay of every job of tests/data/fr (the
# working tree's, the same input for both), and compares their reports
# byte for byte. Blanked, each for a reason:
#   - `_ms` fields, and a text report's "stall -> detection: N ms": wall
#     time;
#   - artifact paths: each revision writes under its own folder;
#   - the line of an error record's `where`: a moved line is no change of
#     behaviour (the file is kept);
#   - a file that git saw renamed between the two revisions, in REV_A's
#     `where`: written as its new name (renaming a file changes no
#     behaviour; `git diff -M --name-status` lists the pairs).
# Exit 0 when every report is the same bytes.
#   ci/same_reports.sh REV_A REV_B   (e.g. a merge's first parent and it)
#   BS_SAME_QUICK=1: the suite, analyze and replay only (no @fault, fuzz,
#   sweep): a minute instead of five.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: ci/same_reports.sh REV_A REV_B" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/bs_same_reports.XXXXXX) || exit 1
trap 'for r in a b; do git -C "$repo" worktree remove --force "$work/$r" 2>/dev/null; done; rm -rf "$work"' EXIT
fr=$repo/tests/data/fr

# The renames from REV_A to REV_B as sed expressions on REV_A's reports.
git -C "$repo" diff -M --name-status "$1" "$2" |
  awk '$1 ~ /^R/ { gsub(/[.]/, "[.]", $2); printf "s#\"%s:#\"%s:#g\n", $2, $3 }' \
    >"$work/renames.sed"
norm() { # file [renames]
  sed -E 's/("[a-z_]*_ms": *)(-?[0-9][0-9.e+-]*|null)/\1_/g
    s/("artifacts": *)\{[^}]*\}/\1_/g
    s/("where": "[^":]*):[0-9]+"/\1:_"/g
    s/(stall -> detection: )[0-9.]+ ms/\1_ ms/g' "$1" |
    if [ -n "${2:-}" ]; then sed -f "$2"; else cat; fi
}

# Every job folder under tests/data/fr (a folder holding a dump).
jobs() {
  find "$fr" -type f \( -name 'rank_*' -o -name '*rank*.json' \) \
    -printf '%h\n' | sort -u
}

run_all() { # backstop, out folder
  local b=$1 o=$2
  (cd "$o" && "$b" run -q --json suite.json --artifacts a1 >/dev/null 2>&1
    if [ "${BS_SAME_QUICK:-0}" != 1 ]; then
      "$b" run @fault -q --json fault.json --artifacts a2 >/dev/null 2>&1
      "$b" fuzz --seed 3 --runs 40 -q --json fuzz.json --artifacts a3 \
        >/dev/null 2>&1
      "$b" sweep '*' --ranks 2 --sample 1% -q --json sweep.json \
        >/dev/null 2>&1
    fi)
  mkdir -p "$o/dumps"
  jobs | while read -r d; do
    k=$(echo "${d#"$fr"/}" | tr / _)
    "$b" analyze "$d" >"$o/dumps/$k.analyze" 2>&1
    echo "exit $?" >>"$o/dumps/$k.analyze"
    "$b" replay "$d" --timeout-ms 300 >"$o/dumps/$k.replay" 2>&1
    echo "exit $?" >>"$o/dumps/$k.replay"
  done
}

i=0
for rev in "$1" "$2"; do
  r=$([ $i -eq 0 ] && echo a || echo b)
  i=$((i + 1))
  git -C "$repo" worktree add -q --detach "$work/$r" "$rev" || exit 1
  # Options, not a preset: older revisions have no cpu preset.
  (cd "$work/$r" && cmake -S . -B build/same -DCMAKE_BUILD_TYPE=Release \
    -DBS_WITH_CUDA=OFF >"$work/$r.build" 2>&1 &&
    cmake --build build/same --target backstop -j "$(nproc)" \
      >>"$work/$r.build" 2>&1) ||
    { echo "same_reports: $rev does not build ($work/$r.build)" >&2; exit 1; }
  mkdir -p "$work/out-$r"
  run_all "$work/$r/build/same/backstop" "$work/out-$r"
done

rc=0
compare() { # name, file a, file b
  norm "$2" "$work/renames.sed" >"$work/cmp.a"
  norm "$3" >"$work/cmp.b"
  if [ ! -s "$work/cmp.a" ]; then
    echo "same_reports: $1: no report from $A" >&2
    rc=1
  elif cmp -s "$work/cmp.a" "$work/cmp.b"; then
    echo "same_reports: $1: the same $(wc -c <"$work/cmp.a") bytes"
  else
    echo "same_reports: $1: differs:"
    diff "$work/cmp.a" "$work/cmp.b" | head -20
    rc=1
  fi
}
A=$1
kinds="suite"
[ "${BS_SAME_QUICK:-0}" = 1 ] || kinds="suite fault fuzz sweep"
for k in $kinds; do
  compare "$k" "$work/out-a/$k.json" "$work/out-b/$k.json"
done
n=0 same=0
for f in "$work"/out-b/dumps/*; do
  k=$(basename "$f")
  n=$((n + 1))
  norm "$work/out-a/dumps/$k" "$work/renames.sed" >"$work/cmp.a" 2>/dev/null
  if norm "$f" | cmp -s "$work/cmp.a" -; then
    same=$((same + 1))
  else
    compare "dumps $k" "$work/out-a/dumps/$k" "$f"
  fi
done
echo "same_reports: analyze and replay of tests/data/fr: $same of $n" \
  "reports the same bytes"
exit $rc

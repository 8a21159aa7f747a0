#!/usr/bin/env bash
# Behaviour unchanged across a refactor: builds backstop (optimised, no
# CUDA) at each of two revisions in a worktree of its own, runs the default
# suite, every fault scenario (@fault) and one fuzz seed with each, and
# compares the JSON reports with `_ms` fields, artifact paths and the line
# numbers of error records' `where` blanked (a moved line is no change of
# behaviour). Exit 0 when all three are the same bytes.
#   ci/same_reports.sh REV_A REV_B   (e.g. a merge's first parent and it)
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: ci/same_reports.sh REV_A REV_B" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/bs_same_reports.XXXXXX) || exit 1
trap 'for r in a b; do git -C "$repo" worktree remove --force "$work/$r" 2>/dev/null; done; rm -rf "$work"' EXIT
norm() {
  sed -E 's/("[a-z_]*_ms": *)(-?[0-9][0-9.e+-]*|null)/\1_/g
    s/("artifacts": *)\{[^}]*\}/\1_/g
    s/("where": "[^":]*):[0-9]+"/\1:_"/g' "$1"
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
  b=$work/$r/build/same/backstop o=$work/out-$r
  mkdir -p "$o"
  (cd "$o" && "$b" run -q --json suite.json --artifacts a1 >/dev/null 2>&1
    "$b" run @fault -q --json fault.json --artifacts a2 >/dev/null 2>&1
    "$b" fuzz --seed 3 --runs 40 -q --json fuzz.json --artifacts a3 >/dev/null 2>&1)
done
rc=0
for k in suite fault fuzz; do
  norm "$work/out-a/$k.json" >"$work/$k.a"
  norm "$work/out-b/$k.json" >"$work/$k.b"
  if [ ! -s "$work/$k.a" ]; then
    echo "same_reports: $k: no report from $1" >&2
    rc=1
  elif cmp -s "$work/$k.a" "$work/$k.b"; then
    echo "same_reports: $k: the same $(wc -c <"$work/$k.a") bytes"
  else
    echo "same_reports: $k: differs:"
    diff "$work/$k.a" "$work/$k.b" | head -20
    rc=1
  fi
done
exit $rc

#!/bin/sh
# The kill matrix as a test (ctest suite_mutants): `backstop mutants -q`
# must pass the fixed core and kill every mutant, but the ordering ones
# named (bs_mutants.def: ORDERING): a matrix of one schedule per run kills
# those by chance or not at all (on real threads, by the OS's timing), so
# their row is shown, not judged, until the matrix explores schedules
# (issue 34, phase 2). Their kill by exploration is test_sched_explore's.
#   mutants_killed.sh BACKSTOP [ORDERING_MUTANT...]
set -u
bin=$1
shift
out=$(mktemp /tmp/bs_mutants.XXXXXX) || exit 1
trap 'rm -f "$out"' EXIT
"$bin" mutants -q >"$out" 2>&1
rows=$(sed -n '/^mutant  *killed by$/,$p' "$out" | tail -n +2)
fail() {
  echo "FAIL: $*"
  sed -n '/^fixed core:/,$p' "$out"
  exit 1
}
grep -q '^fixed core: \([0-9]*\) of \1 runs pass' "$out" ||
  fail "the fixed core did not pass every run"
[ -n "$rows" ] || fail "no kill matrix"
bad=$(echo "$rows" | while read -r name rest; do
  awaited=0
  for m in "$@"; do [ "$m" = "$name" ] && awaited=1; done
  case "$rest" in
  SURVIVED* | INTERRUPTED*)
    [ $awaited = 1 ] && echo "note: $name (ordering) ${rest%% *}" >&2 ||
      echo "$name" ;;
  *) [ $awaited = 1 ] && echo "note: $name (ordering) killed by $rest" >&2 ;;
  esac
done)
[ -z "$bad" ] || fail "not killed: $bad"
echo "ok: every mutant killed$([ $# -gt 0 ] && echo " (not judged: $*)")"

#!/bin/sh
# The kill matrix as a test (ctest suite_mutants): `backstop mutants -q`
# must pass the fixed core and kill every mutant, the ordering ones
# (bs_mutants.def: ORDERING) through the schedules it explores. ARGS go to
# mutants (ctest passes --targeted: each mutant against the scenarios that
# target it; ci/test.sh runs the whole matrix).
#   mutants_killed.sh BACKSTOP [ARGS...]
set -u
bin=$1
shift
out=$(mktemp /tmp/bs_mutants.XXXXXX) || exit 1
trap 'rm -f "$out"' EXIT
"$bin" mutants -q "$@" >"$out" 2>&1
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
  case "$rest" in
  SURVIVED* | INTERRUPTED*) echo "$name" ;;
  esac
done)
[ -z "$bad" ] || fail "not killed: $bad"
echo "ok: every mutant killed"
echo "$rows" | grep -- '--schedule' || true

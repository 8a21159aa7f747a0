#!/bin/sh
# One seed, the same report bytes (apart from `_ms` fields), on a quiet or
# a loaded machine (docs/cli.md):
#   same_bytes.sh BACKSTOP
# runs the default suite, @fault, a 200-run fuzz seed and a sweep sample
# (two reaches of every scenario at 4 ranks) quietly, then again beside 64
# runnable busy processes, and compares the JSON reports. The busy ones run
# at the lowest priority (nice 19): they take every CPU cycle backstop
# leaves and preempt its threads at every turn, without making the pass 30
# times as long. The fuzz seed draws faults that cost watchdog timeouts
# (comm/init_skip: a rank never joins a re-init), so a verdict that hung on
# the machine's speed would differ: it must keep drawing one. Exit 0 only
# when every pair is the same; a difference is printed as a diff.
set -uf # no globbing: the jobs name scenario globs
bin=$1
dir=$(mktemp -d /tmp/bs_same.XXXXXX) || exit 1
loops=""
stop_loops() {
  for pid in $loops; do
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  loops=""
}
trap 'stop_loops; rm -rf "$dir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The report as bytes to compare: every `_ms` field's number and the
# artifacts' paths blanked.
norm() {
  sed -E 's/("[a-z_]*_ms": *)(-?[0-9][0-9.e+-]*|null)/\1_/g
    s/("artifacts": *)\{[^}]*\}/\1_/g' "$1"
}

# $1: a name; the rest: backstop's arguments (the report goes to --json).
report() {
  name=$1
  shift
  "$bin" "$@" -q --json "$dir/$name.json" --artifacts "$dir/art-$name" \
    >"$dir/$name.out" 2>&1
  echo $? >"$dir/$name.rc"
}

rc=0
set -- "suite run -j 2" "fault run @fault -j 2" \
  "fuzz fuzz --seed 3 --runs 200" "sweep sweep * --ranks 4 --sample 2"
for pass in q l; do
  if [ "$pass" = l ]; then
    for _ in $(seq 64); do
      nice -n 19 sh -c 'while :; do :; done' &
      loops="$loops $!"
    done
  fi
  for job in "$@"; do
    # shellcheck disable=SC2086
    report "$pass-${job%% *}" ${job#* }
  done
  stop_loops
done
for job in "$@"; do
  name=${job%% *}
  if [ "$(cat "$dir/q-$name.rc")" != "$(cat "$dir/l-$name.rc")" ]; then
    echo "same_bytes: '$name': exit $(cat "$dir/q-$name.rc") quiet," \
      "$(cat "$dir/l-$name.rc") loaded"
    rc=1
  fi
  if [ ! -s "$dir/q-$name.json" ]; then
    echo "same_bytes: '$name' wrote no report:"
    cat "$dir/q-$name.out"
    rc=1
    continue
  fi
  norm "$dir/q-$name.json" >"$dir/q-$name.norm"
  norm "$dir/l-$name.json" >"$dir/l-$name.norm"
  if ! diff "$dir/q-$name.norm" "$dir/l-$name.norm"; then
    echo "same_bytes: '$name': the report differs under load (above)"
    rc=1
  fi
done
# What the fuzz pair proves rests on its runs waiting out a watchdog.
if ! grep -Eq '"point": "comm/init_skip", "drawn": [0-9]+, "fired": [1-9]' \
  "$dir/q-fuzz.json"; then
  echo "same_bytes: the fuzz seed fired no comm/init_skip: no watchdog" \
    "timeout compared"
  rc=1
fi
[ "$rc" = 0 ] && echo "same_bytes: $# reports the same quiet and beside 64" \
  "busy processes"
exit "$rc"

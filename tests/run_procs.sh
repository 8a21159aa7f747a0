#!/bin/sh
# Launches a process-per-rank run as mpirun would, without MPI:
#   run_procs.sh BACKSTOP NPROCS ARGS...
# starts NPROCS copies of `BACKSTOP ARGS --rendezvous DIR` with
# BS_PROC_RANK/BS_PROC_SIZE/BS_JOB_ID set, in a fresh folder; process 0's
# output is shown, the others' must be empty. Exit 0 only when every
# process exits 0.
set -u
bin=$1 np=$2
shift 2
dir=$(mktemp -d /tmp/bs_launcher.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
pids=""
p=1
while [ "$p" -lt "$np" ]; do
  BS_JOB_ID=ctest BS_PROC_RANK=$p BS_PROC_SIZE=$np \
    "$bin" "$@" --rendezvous "$dir/rv" --artifacts "$dir/artifacts" \
    >"$dir/out$p" 2>&1 &
  pids="$pids $!"
  p=$((p + 1))
done
BS_JOB_ID=ctest BS_PROC_RANK=0 BS_PROC_SIZE=$np \
  "$bin" "$@" --rendezvous "$dir/rv" --artifacts "$dir/artifacts"
rc=$?
for pid in $pids; do
  wait "$pid" || rc=1
done
p=1
while [ "$p" -lt "$np" ]; do
  if [ -s "$dir/out$p" ]; then
    echo "process $p printed:" && cat "$dir/out$p"
    rc=1
  fi
  p=$((p + 1))
done
exit "$rc"

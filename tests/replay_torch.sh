#!/bin/sh
# `backstop replay` of real PyTorch dumps (tests/fr_torch_gen.py: 4-rank
# CPU jobs on torch's gloo, each with the truth of what it did wrong)
# names what the truth says: the exit status, the stuck group (its
# members), the op and the culprit, in the replayed world's own report:
#   replay_torch.sh BACKSTOP [PYTHON]
# PYTHON: the argument, else build/torch-venv's; none with torch: skipped
# (exit 77). The jobs: several process groups (TP x DP, rank 3 skips its
# DP all_reduce), a pipeline whose rank 2 never sends its second
# microbatch, a coalesced all_reduce whose tensors differ on rank 0, and a
# skipped all_reduce; a job whose rank 3 left no dump (the dumps of torch
# 2.15's gloo do not say how many ranks the job had: the replay of the
# three it sees completes, and must say that it did not reproduce what
# the dumps show stuck), and a clean one.
set -u
bs=$1
here=$(cd "$(dirname "$0")" && pwd)
py=${2:-$here/../build/torch-venv/bin/python}
if [ ! -x "$py" ] || ! "$py" -c 'import torch' >/dev/null 2>&1; then
  echo "SKIP: no python with torch at $py (ci/setup.sh installs it)"
  exit 77
fi
tmp=$(mktemp -d /tmp/bs_replay_torch_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
jobs="groups pipeline coalesced skip nodump clean"
# shellcheck disable=SC2086
"$py" "$here/fr_torch_gen.py" "$tmp" $jobs >"$tmp/gen.txt" 2>&1 ||
  fail "fr_torch_gen.py: $(tail -3 "$tmp/gen.txt")"

truth() { sed -n "s/^$2 //p" "$tmp/$1/truth"; }

for job in $jobs; do
  "$bs" replay "$tmp/$job" --timeout-ms 300 >"$tmp/$job.txt" 2>&1
  rc=$?
  # The world's own block: up to the replayed flight recorders' reading.
  sed '/^the replayed ranks/,$d' "$tmp/$job.txt" >"$tmp/$job.world"
  cat "$tmp/$job.world"
  [ "$rc" = "$(truth "$job" exit)" ] || fail "$job: exit $rc, truth $(truth "$job" exit)"
  case $job in
  nodump) grep -q "^backstop: not reproduced: every replayed op completed" \
    "$tmp/$job.world" || fail "$job: an all-clear"; echo "ok: $job"; continue ;;
  clean) grep -q "^backstop: no hang and no desync" "$tmp/$job.world" ||
    fail "$job: not clean"; echo "ok: $job"; continue ;;
  esac
  grep -q "^  culprit: rank $(truth "$job" culprit) (" "$tmp/$job.world" ||
    fail "$job: the culprit is not rank $(truth "$job" culprit)"
  op=$(truth "$job" op)
  [ -z "$op" ] || grep -q ": $op #" "$tmp/$job.world" || fail "$job: no $op"
  p2p=$(truth "$job" p2p)
  [ -z "$p2p" ] || grep -q "^  rank $(truth "$job" waiting): $p2p #" \
    "$tmp/$job.world" || fail "$job: rank $(truth "$job" waiting) not in $p2p"
  group=$(truth "$job" group)
  if [ "$group" != 0 ]; then
    grep "^backstop: " "$tmp/$job.world" | grep -q ", group $group (" ||
      fail "$job: the block is not group $group's"
    members=$(truth "$job" members | tr ',' ' ')
    for m in $members; do
      grep -q "^  rank $m: " "$tmp/$job.world" || fail "$job: no member $m"
    done
  fi
  echo "ok: $job"
done

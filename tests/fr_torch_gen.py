"""Real Flight Recorder dumps of hung and diverged 4-rank jobs, written by
PyTorch itself (CPU only, the world on 127.0.0.1):

    python fr_torch_gen.py OUT [SCENARIO ...]

writes OUT/<scenario>/rank_<R> for each scenario (all by default), and
OUT/<scenario>/truth: what the job did wrong, as the scenario built it
(one `key value` a line: status, group, seq, op, culprit, exit).

Collectives go through gloo, which records them itself. gloo records no
p2p op, so the p2p scenarios run on "hooked", a backend of this script's
that hands every op to a gloo group inside it: PyTorch then attaches its
FlightRecorderHook (what it does for every backend without a recorder of
its own: nccl2, mpi, ucc, plugins), which records sends and receives too.
Each rank dumps from a thread of its own, once every rank has recorded
what it will, while its main thread waits in the hung op (as a watchdog's
dump would), then leaves at once: nothing waits
for the hung op's timeout. torch is imported once; each job's 4 ranks are
forked from this process.
"""

import datetime
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings

warnings.filterwarnings("ignore")  # numpy's absence, deprecations

os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch._C import _distributed_c10d as c10d  # noqa: E402

# gloo behind a backend name PyTorch records p2p ops of (its
# FlightRecorderHook), and a rank's dump, shared with the corpus's runner.
from fr_torch_prog import Hooked, dump, entries  # noqa: E402

WORLD = 4
SETTLE_S = float(os.environ.get("FR_GEN_SETTLE_S", "0.2"))
WAIT_S = 60  # the bound on every wait for a rank's records
STORE = []  # this rank's store, for the jobs that leave early
NO_DUMP = []  # set on a rank that leaves no dump: its job ends the process


def ones(n):
    return torch.ones(n)


# ---- the jobs: each rank's part, r its rank ----


def skip(r, g):
    """Rank 3 skips the second all_reduce; the others wait in it."""
    dist.all_reduce(ones(4))
    if r != 3:
        dist.all_reduce(ones(4))


def size(r, g):
    """Rank 1 hands the second all_reduce 8 elements, the others 4."""
    dist.all_reduce(ones(4))
    dist.all_reduce(ones(8 if r == 1 else 4), async_op=True)


def op(r, g):
    """Rank 2 broadcasts where the others all_reduce (#2)."""
    dist.all_reduce(ones(4))
    if r == 2:
        dist.broadcast(ones(4), 0, async_op=True)
    else:
        dist.all_reduce(ones(4), async_op=True)


def groups(r, g):
    """TP x DP: TP groups {0,1},{2,3}, DP groups {0,2},{1,3}. Two steps;
    in the second, rank 3 skips its DP all_reduce: rank 1 waits in it, and
    rank 0 waits for rank 1 in the next TP all_reduce."""
    tp = [dist.new_group([0, 1]), dist.new_group([2, 3])][r // 2]
    dp = [dist.new_group([0, 2]), dist.new_group([1, 3])][r % 2]
    for step in range(2):
        dist.all_reduce(ones(4), group=tp)
        if step == 1 and r == 3:
            break
        dist.all_reduce(ones(2), group=dp)
    dist.all_reduce(ones(4), group=tp)


def two_hangs(r, g):
    """TP x DP, as groups; in the second step ranks 2 and 3 both skip their
    DP all_reduce: both DP groups hang, each on its own (rank 0 waits for
    rank 2 in {0,2}, rank 1 for rank 3 in {1,3}), neither behind the
    other: two roots."""
    tp = [dist.new_group([0, 1]), dist.new_group([2, 3])][r // 2]
    dp = [dist.new_group([0, 2]), dist.new_group([1, 3])][r % 2]
    for step in range(2):
        dist.all_reduce(ones(4), group=tp)
        if step == 1 and r >= 2:
            break
        dist.all_reduce(ones(2), group=dp)


def pipeline(r, g):
    """p2p stages 0 -> 1 -> 2 -> 3, two microbatches; rank 2 never sends
    the second: rank 3 waits in its recv."""
    dist.all_reduce(ones(4))
    for mb in range(2):
        x = ones(8)
        if r > 0:
            dist.recv(x, r - 1)
        if r < 3 and not (r == 2 and mb == 1):
            dist.send(x, r + 1)


def ring(r, g):
    """A ring exchange of isend and irecv (context parallelism's), twice:
    each rank sends to the next and receives from the one before, issuing
    both before it waits; rank 1 skips the second step: rank 0 waits in
    its send #3 to rank 1, rank 2 in its recv #4 from it."""
    dist.all_reduce(ones(4))
    for step in range(2):
        if step == 1 and r == 1:
            break
        works = [dist.isend(ones(4), (r + 1) % WORLD),
                 dist.irecv(torch.zeros(4), (r - 1) % WORLD)]
        for w in works:
            w.wait()


def fanin(r, g):
    """Rank 0 irecvs from ranks 1, 2 and 3 at once and waits for all;
    rank 1 never sends: rank 0 waits in its recv #1 from rank 1 (those
    from 2 and 3 completed)."""
    dist.all_reduce(ones(4))
    if r == 0:
        works = [dist.irecv(torch.zeros(4), k) for k in (1, 2, 3)]
        for w in works:
            w.wait()
    elif r != 1:
        dist.send(ones(4), 0)


def pipeline_sync(r, g):
    """The pipeline, then every rank's all_reduce #2: ranks 0-2 wait in
    it, rank 3 still in its recv from rank 2, which never sent."""
    pipeline(r, g)
    dist.all_reduce(ones(4))


def coalesced(r, g):
    """all_reduce_coalesced of 2 tensors; rank 0 hands it 3 of the same 9
    elements in all (gloo reduces them as one buffer: no error, a wrong
    result)."""
    dist.all_reduce(ones(4))
    ts = [ones(4), ones(2), ones(3)] if r == 0 else [ones(4), ones(5)]
    dist.all_reduce_coalesced(ts)


def nodump(r, g):
    """Rank 3 stops after the first all_reduce and leaves no dump. It ends
    once the others have dumped: ended first, it failed their second
    all_reduce for want of it, which gloo then retires as done on the
    ranks that notice; on all three (tests/data/fr/torch-nodump_gone) the
    dumps show every op done, and replay could not reproduce the hang."""
    dist.all_reduce(ones(4))
    if r == WORLD - 1:
        NO_DUMP.append(True)
        STORE[0].set(f"rec/{r}", "1")  # it has recorded all it will
        STORE[0].wait([f"dumped/{k}" for k in range(WORLD - 1)],
                      datetime.timedelta(seconds=WAIT_S))
        os._exit(0)
    dist.all_reduce(ones(4))


def a2a(r, g):
    """all_to_all_single with uneven splits (rank r sends r+1 elements to
    each rank: every rank's sizes differ, and that is no mismatch), then
    rank 2 skips the second one; the others wait in it."""
    outs = [k + 1 for k in range(WORLD)]
    for step in range(2):
        if step == 1 and r == 2:
            break
        dist.all_to_all_single(torch.zeros(sum(outs)), ones(WORLD * (r + 1)),
                               output_split_sizes=outs,
                               input_split_sizes=[r + 1] * WORLD)


def gather(r, g):
    """Rank 2 skips the gather to rank 0 (#2): rank 0 waits in it (the
    other ranks' gloo retires their part once sent; the root alone holds
    the outputs, and that is no mismatch)."""
    dist.all_reduce(ones(4))
    if r != 2:
        dist.gather(ones(4), [ones(4) for _ in range(WORLD)] if r == 0
                    else None, dst=0)


def subgroups(r, g):
    """dist.new_subgroups(2): groups {0,1} and {2,3}; rank 3 skips the
    second all_reduce of its subgroup, rank 2 waits in it."""
    sub, _ = dist.new_subgroups(2)
    dist.all_reduce(ones(4), group=sub)
    if r != 3:
        dist.all_reduce(ones(4), group=sub)


def clean(r, g):
    """Every collective completes (the one job that did not hang)."""
    dist.all_reduce(ones(4))
    dist.barrier()
    dist.broadcast(ones(4), 0)
    out = [ones(4) for _ in range(WORLD)]
    dist.all_gather(out, ones(4))


# name: (job, backend, pickle (else JSON), truth, the entries each rank
# records before the dump: the hung op included, the ops it never reaches
# not; the dump waits for them, not for a time, so a loaded machine gives
# the same dumps)
JOBS = {
    "skip": (skip, "gloo", True,
             "status hang\ngroup 0\nseq 2\nop all_reduce\nculprit 3\nexit 1",
             (2, 2, 2, 1)),
    "size": (size, "gloo", False,
             "status desync\ngroup 0\nseq 2\nop all_reduce\nmismatch size\n"
             "culprit 1\nexit 1",
             (2, 2, 2, 2)),
    "op": (op, "gloo", True,
           "status desync\ngroup 0\nseq 2\nop broadcast\nmismatch op\n"
           "culprit 2\nexit 1",
             (2, 2, 2, 2)),
    "groups": (groups, "gloo", True,
               "status hang\ngroup 4\nmembers 1,3\nseq 2\nop all_reduce\n"
               "culprit 3\nexit 1",
             (5, 4, 5, 4)),
    "two_hangs": (two_hangs, "gloo", True,
                  "status hang\ngroup 3\nmembers 0,2\nseq 2\n"
                  "op all_reduce\nculprit 2,3\nheld all_reduce #2 of "
                  "process group 4 (undefined): rank 1 waits for rank 3 "
                  "(root); its root: rank 3\nexit 1", (4, 4, 3, 3)),
    "pipeline": (pipeline, "hooked", False,
                 "status hang\ngroup 0\np2p recv\nwaiting 3\nculprit 2\n"
                 "exit 1", (3, 5, 4, 3)),
    "ring": (ring, "hooked", True,
             "status hang\ngroup 0\np2p send\nwaiting 0\nculprit 1\n"
             "exit 1", (5, 3, 5, 5)),
    "fanin": (fanin, "hooked", False,
              "status hang\ngroup 0\np2p recv\nwaiting 0\nculprit 1\n"
              "exit 1", (4, 1, 2, 2)),
    "pipeline_sync": (pipeline_sync, "hooked", True,
                      "status hang\ngroup 0\nseq 2\nop all_reduce\n"
                      "culprit 2\nexit 1",
             (4, 6, 5, 3)),
    "coalesced": (coalesced, "gloo", False,
                  "status desync\ngroup 0\nseq 2\nop all_reduce\n"
                  "mismatch shape\nculprit 0\nexit 1",
             (2, 2, 2, 2)),
    "nodump": (nodump, "gloo", True,
               "status hang\ngroup 0\nseq 2\nop all_reduce\nculprit 3\n"
               "exit 1", (2, 2, 2, 1)),
    "a2a": (a2a, "gloo", False,
            "status hang\ngroup 0\nseq 2\nop all_to_all\nculprit 2\nexit 1",
            (2, 2, 1, 2)),
    "gather": (gather, "gloo", True,
               "status hang\ngroup 0\nseq 2\nop gather\nculprit 2\nexit 1",
               (2, 2, 1, 2)),
    "subgroups": (subgroups, "gloo", True,
                  "status hang\ngroup 2\nmembers 2-3\nseq 2\n"
                  "op all_reduce\nculprit 3\nexit 1",
                  (2, 2, 2, 1)),
    "clean": (clean, "gloo", True, "status clean\nexit 0",
             (4, 4, 4, 4)),
}


def rank_main(r, name, store_file, out):
    job, backend, pickle, _, counts = JOBS[name]
    os.environ["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(out, "rank_")
    if backend == "hooked":
        dist.Backend.register_backend("hooked", Hooked, devices=["cpu"])
    store = dist.FileStore(store_file, -1)
    store.set_timeout(datetime.timedelta(seconds=30))
    store = dist.PrefixStore(name, store)
    STORE.append(store)
    dist.init_process_group(backend, store=store, rank=r, world_size=WORLD)

    # Each rank dumps once every rank has recorded all it will (its hung op
    # included): however slow the machine, the dumps hold the same entries.
    def when_recorded():
        until = time.monotonic() + WAIT_S
        while entries(backend) < counts[r] and time.monotonic() < until:
            time.sleep(0.02)
        store.set(f"rec/{r}", "1")
        store.wait([f"rec/{k}" for k in range(WORLD)],
                   datetime.timedelta(seconds=WAIT_S))
        time.sleep(SETTLE_S)
        if NO_DUMP:
            return  # its job ends the process
        dump(r, out, backend, pickle)
        store.set(f"dumped/{r}", "1")
        os._exit(0)

    threading.Thread(target=when_recorded, daemon=True).start()
    try:
        job(r, None)
    except RuntimeError:  # a peer gone (nodump): a hang all the same
        pass
    time.sleep(2 * WAIT_S + 10)  # the dumping thread ends the process


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(JOBS)
    # The ranks meet in a FileStore: no port to pick free and lose to
    # another process before a server binds it.
    stores = tempfile.mkdtemp(prefix="fr_torch_gen.")
    pids = []
    for name in names:
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "truth"), "w") as f:
            f.write(JOBS[name][3] + "\n")
        for r in range(WORLD):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    rank_main(r, name, os.path.join(stores, "store"), d)
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
    bad = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        bad += status != 0
    shutil.rmtree(stores, ignore_errors=True)
    if bad:
        print(f"fr_torch_gen: {bad} rank processes failed", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

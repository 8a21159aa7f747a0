"""Real PyTorch Flight Recorder dumps of hung and diverged NCCL jobs, made by
ProcessGroupNCCL itself (for tests/data/fr/nccl-*; see its README).

Run with torchrun, one process per rank (4 ranks on one GPU need NCCL >= 2.30
preloaded and NCCL_MULTI_RANK_GPU_ENABLE=1, as ci/gpu.sh's `frdumps` step does):

  TORCH_FR_BUFFER_SIZE=2000 torchrun --nproc-per-node 4 fr_nccl_dumps.py KIND DIR JSONDIR

Each rank issues KIND's collectives (NCCL work is asynchronous: a rank whose
peer never joins does not block here), lets the watchdog retire what
completed, then writes what PyTorch's own dump call returns: the pickle to
DIR/rank_<R> (what TORCH_FR_DUMP_TEMP_FILE would get) and the JSON variant
to JSONDIR/rank_<R>.json (apart: torchfrtrace reads every file below DIR). Then it leaves at once (os._exit): a rank stuck
in a kernel cannot tear NCCL down.

KIND: ok (nothing wrong), skip (rank 3 skips the 3rd all_reduce), size (rank 1
all_reduces fewer elements), op (rank 1 all_gathers where the others
all_reduce), groups (TP {0,1},{2,3} x DP {0,2},{1,3}; rank 3 skips its 2nd DP
all_reduce), p2p (a pipeline 0->1->2->3 of two microbatches; rank 2 never
sends the second), coalesced (rank 1 coalesces 2 tensors, the others 3),
nodump (skip, and rank 3 writes no dump), a2a (all_to_all_single of uneven
splits, rank r sending 256*(r+1) elements to each; rank 2 skips the second),
gather (an all_reduce, then a gather to rank 0 that rank 2 skips: neither
blocking nor async does it return to the script on ranks 0, 1 and 3, so
only rank 2 dumps), batch (a ring of
batch_isend_irecv, each rank sending to the next and receiving from the
previous, twice; rank 1 skips the second).
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

kind, out, jout = sys.argv[1], sys.argv[2], sys.argv[3]
rank = int(os.environ["RANK"])
dev = torch.device("cuda:0")
torch.cuda.set_device(dev)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120),
                        device_id=dev)
world = dist.get_world_size()
x = torch.ones(1024, device=dev)


def all_reduces(n, skip_rank=None, skip_at=None, group=None):
    for i in range(n):
        if rank == skip_rank and i == skip_at:
            continue
        dist.all_reduce(x, group=group)


if kind == "ok":
    all_reduces(3)
elif kind in ("skip", "nodump"):
    all_reduces(3, skip_rank=3, skip_at=2)
    all_reduces(1)
elif kind == "size":
    all_reduces(2)
    dist.all_reduce(x[:512] if rank == 1 else x)
elif kind == "op":
    all_reduces(2)
    if rank == 1:
        dist.all_gather_into_tensor(torch.empty(1024 * world, device=dev), x)
    else:
        dist.all_reduce(x)
elif kind == "groups":
    tp = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    dp = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    mytp, mydp = tp[rank // 2], dp[rank % 2]
    for step in range(2):
        dist.all_reduce(x, group=mytp)
        if not (rank == 3 and step == 1):
            dist.all_reduce(x, group=mydp)
elif kind == "p2p":
    for mb in range(2):
        if rank > 0:
            dist.recv(x, src=rank - 1)
        if rank < world - 1 and not (rank == 2 and mb == 1):
            dist.send(x, dst=rank + 1)
elif kind == "coalesced":
    ts = [torch.ones(256, device=dev) for _ in range(2 if rank == 1 else 3)]
    all_reduces(1)
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
elif kind == "a2a":
    outs = [256 * (k + 1) for k in range(world)]
    for step in range(2):
        if not (rank == 2 and step == 1):
            dist.all_to_all_single(
                torch.empty(sum(outs), device=dev),
                torch.ones(256 * (rank + 1) * world, device=dev),
                output_split_sizes=outs,
                input_split_sizes=[256 * (rank + 1)] * world)
elif kind == "gather":
    all_reduces(1)
    if rank != 2:
        dist.gather(x, [torch.empty_like(x) for _ in range(world)]
                    if rank == 0 else None, dst=0, async_op=True)
elif kind == "batch":
    for step in range(2):
        if rank == 1 and step == 1:
            break
        dist.batch_isend_irecv([
            dist.P2POp(dist.isend, x, (rank + 1) % world),
            dist.P2POp(dist.irecv, torch.empty_like(x), (rank - 1) % world)])
else:
    sys.exit("unknown kind " + kind)

time.sleep(3)  # the watchdog retires what completed
c10d = torch._C._distributed_c10d
if hasattr(c10d, "_dump_nccl_trace"):
    pkl = c10d._dump_nccl_trace(True, True, False)
    js = c10d._dump_nccl_trace_json(True, False)
else:
    pkl = c10d._dump_fr_trace(True, True, False, backend="nccl")
    js = c10d._dump_fr_trace_json(True, False, backend="nccl")
if not (kind == "nodump" and rank == 3):
    for d in (out, jout):
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(out, "rank_%d" % rank), "wb") as f:
        f.write(pkl)
    with open(os.path.join(jout, "rank_%d.json" % rank), "w") as f:
        f.write(js if isinstance(js, str) else js.decode())
print("rank %d: %s dumped" % (rank, kind), flush=True)
sys.stdout.flush()
os._exit(0)

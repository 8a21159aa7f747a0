"""PyTorch itself runs job programs (CPU, gloo, the world on 127.0.0.1) and
writes their Flight Recorder dumps:

    python fr_torch_prog.py run OUT PROGRAM.json ...   # Backstop's corpus
    python fr_torch_prog.py shapes OUT [NAME ...]      # the named shapes

A program (`backstop bench --hangs N --keep DIR` writes them, schema
"backstop-hang-program/1") says how the job makes its process groups (a
DeviceMesh, new_subgroups, new_group, in torch's order: the names torch
gives them are checked against the program's) and what each rank issues,
its fault applied: an op left out (skipped), ops swapped, another size,
shape, dtype or op, a rank that stops (stalls) or leaves no dump. Each
job's dumps go to OUT/<name>/rank_<R> (OUT/<name>/node<K>/ for a job
whose dumps are gathered a folder per node; a missing node's folder is
not made), with its truth (OUT/<name>/truth.json, the schema of `backstop
analyze --json`, from the program, never from an analysis).

Collectives go through gloo; a program with p2p ops runs on "hooked", a
backend of this script's that hands every op to a gloo group inside it,
so that PyTorch's FlightRecorderHook records the sends and receives too
(gloo records none). Each rank dumps from a thread of its own once every
rank has recorded what it will (this script works that out from the
program, as the ops match), while its main thread waits in its last op,
then leaves at once. The ranks meet in a FileStore (a file of the job's
under a scratch folder): a TCPStore's port, picked free by the launcher
and bound by its server only after the ranks were forked, was now and
then taken meanwhile by another job's gloo, and a rank that connected
there never came up. A job whose rank processes did not all end well is
run again, at most three times; each is said on stderr.
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

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch._C import _distributed_c10d as c10d  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fr_torch_shapes  # noqa: E402

WAIT_S = float(os.environ.get("FR_PROG_WAIT_S", "60"))
SETTLE_S = float(os.environ.get("FR_GEN_SETTLE_S", "0.2"))
PARALLEL = int(os.environ.get("FR_PROG_JOBS", "3"))
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16,
          "float16": torch.float16, "int32": torch.int32,
          "int64": torch.int64, "uint8": torch.uint8}


class Hooked(c10d.Backend):
    """gloo behind a backend name PyTorch does not know to record itself."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        opts = c10d.ProcessGroupGloo._Options()
        opts._timeout = timeout
        opts._devices = [c10d.ProcessGroupGloo.create_default_device()]
        self.inner = c10d.ProcessGroupGloo(store, rank, size, opts)

    def getBackendName(self):
        return "hooked"

    def send(self, tensors, dst, tag):
        return self.inner.send(tensors, dst, tag)

    def recv(self, tensors, src, tag):
        return self.inner.recv(tensors, src, tag)

    def allreduce(self, tensors, opts):
        return self.inner.allreduce(tensors, opts)

    def allreduce_coalesced(self, tensors, opts):
        return self.inner.allreduce_coalesced(tensors, opts)

    def allgather(self, outs, ins, opts):
        return self.inner.allgather(outs, ins, opts)

    def broadcast(self, tensors, opts):
        return self.inner.broadcast(tensors, opts)

    def all_to_all_single(self, out, inp, osplit, isplit, opts):
        return self.inner.alltoall_base(out, inp, osplit, isplit, opts)

    def barrier(self, opts):
        return self.inner.barrier(opts)


# ---- a rank ----


def tensor(n, dt, shape=None):
    t = torch.ones(n, dtype=DTYPES[dt])
    return t.reshape(shape) if shape else t


def issue(op, groups, r):
    g = groups[op["g"]]
    name = op["op"]
    dt = op.get("dt", "float32")
    if name == "all_reduce":
        dist.all_reduce(tensor(op["n"], dt, op.get("shape")), group=g)
    elif name == "all_reduce_coalesced":
        dist.all_reduce_coalesced([tensor(n, dt) for n in op["parts"]],
                                  group=g)
    elif name == "all_gather":
        size = dist.get_world_size(g)
        dist.all_gather([tensor(op["n"], dt) for _ in range(size)],
                        tensor(op["n"], dt), group=g)
    elif name == "broadcast":
        dist.broadcast(tensor(op["n"], dt), dist.get_global_rank(g, 0)
                       if op["g"] else 0, group=g)
    elif name == "barrier":
        dist.barrier(group=g)
    elif name == "all_to_all":
        size = dist.get_world_size(g)
        dist.all_to_all_single(tensor(op["n"] * size, dt),
                               tensor(op["n"] * size, dt), group=g)
    elif name == "send":
        dist.send(tensor(op["n"], dt), op["peer"], group=g)
    elif name == "recv":
        dist.recv(tensor(op["n"], dt), op["peer"], group=g)
    elif name == "sendrecv":  # isend then irecv, then a wait for both
        works = []
        if op.get("to") is not None:
            works.append(dist.isend(tensor(op["n"], dt), op["to"], group=g))
        if op.get("from") is not None:
            works.append(dist.irecv(tensor(op["n"], dt), op["from"], group=g))
        for w in works:
            w.wait()
    else:
        raise ValueError(f"rank {r}: no such op '{name}'")


def make_groups(prog, r):
    """The program's groups, made as it says, in its order; their names
    checked against the program's (torch names them as it makes them)."""
    from torch.distributed.device_mesh import init_device_mesh
    made = []  # (name, ranks) in the order torch made them
    for m in prog["make"]:
        if m["how"] == "mesh":
            mesh = init_device_mesh("cpu", tuple(m["shape"]),
                                    mesh_dim_names=tuple(m["dims"]))
            made.extend(("mesh", d, mesh) for d in m["dims"])
        elif m["how"] == "subgroups":
            made.append(("sub", dist.new_subgroups(m["size"])[0], None))
        else:
            made.append(("group", dist.new_group(
                m["ranks"], group_desc=m.get("desc")), None))
    by_name = {}
    for how, a, mesh in made:
        g = mesh.get_group(a) if how == "mesh" else a
        if g is not None and g != dist.GroupMember.NON_GROUP_MEMBER:
            by_name[g.group_name] = g
    groups = [dist.group.WORLD]
    for g in prog["groups"]:
        if r in g["ranks"] and g["name"] not in by_name:
            raise RuntimeError(f"rank {r}: torch made no group "
                               f"'{g['name']}' of {g['ranks']}: "
                               f"{sorted(by_name)}")
        groups.append(by_name.get(g["name"]))
    return groups


def dump(r, out, backend, pickle):
    if pickle:
        c10d._dump_fr_trace_file(r, backend=backend)
        return
    data = c10d._dump_fr_trace_json(backend=backend)
    with open(os.path.join(out, f"rank_{r}.tmp"), "wb") as f:
        f.write(data)
    os.replace(os.path.join(out, f"rank_{r}.tmp"),
               os.path.join(out, f"rank_{r}"))


def entries(backend):
    """Entries recorded so far, those a small ring (TORCH_FR_BUFFER_SIZE)
    has overwritten included: the last record_id's successor."""
    held = json.loads(c10d._dump_fr_trace_json(backend=backend)).get(
        "entries", [])
    return max((e["record_id"] for e in held), default=-1) + 1


def deadline(seconds):
    """Ends this rank's process after seconds whatever it waits in (a
    peer that failed to start leaves the others in new_group for ever)."""
    def end():
        time.sleep(seconds)
        os._exit(3)
    threading.Thread(target=end, daemon=True).start()


def rank_main(r, prog, store_file, out, want):
    deadline(4 * WAIT_S)
    backend = "hooked" if prog.get("p2p") else "gloo"
    os.environ["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(out, "rank_")
    if backend == "hooked":
        dist.Backend.register_backend("hooked", Hooked, devices=["cpu"])
    store = dist.FileStore(store_file, -1)
    store.set_timeout(datetime.timedelta(seconds=30))
    dist.init_process_group(backend, store=store, rank=r,
                            world_size=prog["world"])
    store.set(f"up/{r}", "1")
    groups = make_groups(prog, r)
    pickle = prog.get("pickle", True)
    dumps = r not in prog.get("no_dump", [])

    def when_recorded():
        code = 4
        try:
            until = time.monotonic() + WAIT_S
            while entries(backend) < want[r] and time.monotonic() < until:
                time.sleep(0.02)
            store.set(f"rec/{r}", "1")
            store.wait([f"rec/{k}" for k in range(prog["world"])],
                       datetime.timedelta(seconds=WAIT_S))
            time.sleep(SETTLE_S)
            if dumps:
                dump(r, out, backend, pickle)
                store.set(f"dumped/{r}", "1")
            else:  # ended first, it would fail its peers' pending ops,
                # which gloo then retires as done before they dump
                store.wait([f"dumped/{k}" for k in range(prog["world"])
                            if k not in prog.get("no_dump", [])],
                           datetime.timedelta(seconds=WAIT_S))
            code = 0
        finally:
            os._exit(code)

    threading.Thread(target=when_recorded, daemon=True).start()
    try:
        for op in prog["ranks"][r]["ops"]:
            issue(op, groups, r)
    except RuntimeError:  # a peer's error: a hang all the same
        pass
    time.sleep(3 * WAIT_S)  # the dumping thread ends the process


# ---- a job ----


def start(prog, name, out, attempt, stores):
    """The job's ranks forked, meeting in a store file of this attempt's
    own under the folder stores (no key of another attempt's there)."""
    os.environ["TORCH_FR_BUFFER_SIZE"] = str(prog.get("fr_buffer", 2000))
    want = fr_torch_shapes.settle(prog)["issued"]
    store_file = os.path.join(stores, f"{name}.{attempt}")
    pids = []
    for r in range(prog["world"]):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                rank_main(r, prog, store_file, out, want)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    # The ranks' keys (up/R) are read from it.
    return pids, store_file, dist.FileStore(store_file, -1)


def finish(job, world):
    """The number of rank processes that failed. A job whose ranks are not
    all up within WAIT_S (one that never reached the store leaves the
    others in gloo's connect until their deadline, 4 x WAIT_S) is ended
    then: all failed."""
    pids, store_file, store = job
    bad = 0
    try:
        store.wait([f"up/{r}" for r in range(world)],
                   datetime.timedelta(seconds=WAIT_S))
    except RuntimeError:  # DistStoreError: a timeout
        for pid in pids:
            os.kill(pid, 9)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        bad += status != 0
    os.remove(store_file)
    return bad


def lay_out(prog, out):
    """A job whose dumps are gathered a folder per node: each rank's dump
    moved into its node's folder, a missing node's removed."""
    nodes = prog.get("nodes")
    if not nodes:
        return
    for k, ranks in enumerate(nodes):
        sub = os.path.join(out, f"node{k}")
        if k not in prog.get("missing_nodes", []):
            os.makedirs(sub, exist_ok=True)
        for r in ranks:
            f = os.path.join(out, f"rank_{r}")
            if not os.path.exists(f):
                continue
            if k in prog.get("missing_nodes", []):
                os.remove(f)
            else:
                shutil.move(f, os.path.join(sub, f"rank_{r}"))


def run_all(jobs, out, stores):
    """jobs: [(name, program, truth)]; PARALLEL at once. A job whose rank
    processes did not all end as the program says (a peer that took
    longer than WAIT_S to start or record on a loaded machine) runs again,
    three times at most. Returns the number that failed."""
    failed = 0
    queue = [(name, prog, truth, 0) for name, prog, truth in jobs]
    running = []
    while queue or running:
        while queue and len(running) < PARALLEL:
            name, prog, truth, runs = queue.pop(0)
            d = os.path.join(out, name)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            job = start(prog, name, d, runs, stores)
            with open(os.path.join(d, "truth.json"), "w") as f:
                json.dump(truth, f, indent=1)
            running.append((name, prog, truth, runs, d, job))
        name, prog, truth, runs, d, job = running.pop(0)
        bad = finish(job, prog["world"])
        if bad and runs < 2:
            print(f"fr_torch_prog: {name}: {bad} rank processes failed, "
                  "ran again", file=sys.stderr)
            queue.append((name, prog, truth, runs + 1))
        elif bad:
            print(f"fr_torch_prog: {name}: {bad} rank processes failed",
                  file=sys.stderr)
            failed += 1
        else:
            lay_out(prog, d)
    return failed


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("run", "shapes"):
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[2]
    if sys.argv[1] == "shapes":
        jobs = fr_torch_shapes.jobs(sys.argv[3:])
    else:
        jobs = []
        for path in sys.argv[3:]:
            with open(path) as f:
                prog = json.load(f)
            base = os.path.splitext(os.path.basename(path))[0]
            truth_path = os.path.join(os.path.dirname(path),
                                      base.replace("program", "truth") +
                                      ".json")
            truth = {}
            if os.path.exists(truth_path):
                with open(truth_path) as f:
                    truth = json.load(f)
            jobs.append((prog.get("name", base), prog, truth))
    stores = tempfile.mkdtemp(prefix="fr_torch_prog.")
    try:
        return 1 if run_all(jobs, out, stores) else 0
    finally:
        shutil.rmtree(stores, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

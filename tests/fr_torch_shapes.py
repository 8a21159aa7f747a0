"""The named job shapes fr_torch_prog.py runs under PyTorch (`shapes`):
those issue 33 lists (a wait cycle through three groups of a DeviceMesh,
an order deadlock, two independent roots, desyncs of jobs that completed,
a wrapped ring, a MoE-like TP x PP x EP job with two wedged ranks) and
others, each a program (fr_torch_prog.py's format) and its truth, written
here from how the job was built (the schema of `backstop analyze --json`:
verdict, roots with rank, kind, group, op; an order deadlock's cycle).
"""

SCHEMA = "backstop-hang-report/1"


# ---- how a program settles: what each rank issues, where it waits ----


def settle(prog):
    """Each rank's ops issued in turn until none can move: a collective of
    a group completes once every member issued it (by the group's sequence
    number, as PyTorch matches them), the k-th send from a to b with the
    k-th receive of b from a. Returns "issued" (entries each rank records,
    the op it waits in included), "waits" (rank -> the parts it waits in:
    (key, its p2p_seq_id or 0)), "seq" (rank -> group -> last collective
    seq) and "have" (key -> the ranks that issued it)."""
    world = prog["world"]
    members = [list(range(world))] + [g["ranks"] for g in prog["groups"]]
    pos, issued = [0] * world, [0] * world
    pending = [None] * world
    seqs = [dict() for _ in range(world)]
    p2p = [dict() for _ in range(world)]
    have, pairs = {}, {}

    def part(r, g, a, b):
        k = (g, a, b)
        pairs[(r,) + k] = pairs.get((r,) + k, 0) + 1
        p2p[r][g] = p2p[r].get(g, 0) + 1
        return (("p2p", g, a, b, pairs[(r,) + k]), p2p[r][g])

    def keys(r, op):
        g, name = op["g"], op["op"]
        if name == "send":
            return [part(r, g, r, op["peer"])]
        if name == "recv":
            return [part(r, g, op["peer"], r)]
        if name == "sendrecv":
            out = []
            if op.get("to") is not None:
                out.append(part(r, g, r, op["to"]))
            if op.get("from") is not None:
                out.append(part(r, g, op["from"], r))
            return out
        seqs[r][g] = seqs[r].get(g, 0) + 1
        return [(("coll", g, seqs[r][g]), 0)]

    def done(k):
        need = 2 if k[0] == "p2p" else len(members[k[1]])
        return len(have.get(k, ())) >= need

    moved = True
    while moved:
        moved = False
        for r in range(world):
            if pending[r] is not None:
                if all(done(k) for k, _ in pending[r]):
                    pending[r] = None
                    moved = True
                continue
            ops = prog["ranks"][r]["ops"]
            if pos[r] < len(ops):
                ks = keys(r, ops[pos[r]])
                pos[r] += 1
                for k, _ in ks:
                    have.setdefault(k, set()).add(r)
                issued[r] += len(ks)
                pending[r] = ks
                moved = True
    waits = {r: [(k, s) for k, s in pending[r] if not done(k)]
             for r in range(world) if pending[r]}
    return {"issued": issued, "waits": waits, "seq": seqs, "have": have}


def p2p_held(prog, m):
    """The p2p ops of others that wait for rank m: each waiter's first
    part not matched (as analyze reads a waiter), when its peer is m."""
    st = settle(prog)
    held = []
    for w, parts in sorted(st["waits"].items()):
        for k, seq in parts:
            if k[0] != "p2p":
                continue
            if m in (k[2], k[3]) and w != m:
                held.append((k[1], seq))
            break
    return held


class Job:
    """A program being built: its groups in torch's order of making them
    (names "1", "2", ... as torch gives them), each rank's ops."""

    def __init__(self, world, **extra):
        self.world = world
        self.groups = []  # {"name", "desc", "ranks"}
        self.make = []
        self.ops = [[] for _ in range(world)]
        self.extra = extra

    def _add(self, ranks, desc):
        self.groups.append({"name": str(len(self.groups) + 1), "desc": desc,
                            "ranks": sorted(ranks)})
        return len(self.groups)  # its index in ops ("g"): 0 is the world

    def mesh(self, shape, dims):
        """init_device_mesh: each dim's groups, the other coordinates in
        row-major order; {dim: [group index of each rank]}."""
        self.make.append({"how": "mesh", "shape": shape, "dims": dims})
        of = {}
        for d, dim in enumerate(dims):
            of[dim] = [0] * self.world
            others = [k for k in range(len(shape)) if k != d]
            for flat in range(self.world // shape[d]):
                coords, rest = [0] * len(shape), flat
                for k in reversed(others):
                    coords[k], rest = rest % shape[k], rest // shape[k]
                ranks = []
                for i in range(shape[d]):
                    coords[d] = i
                    r = 0
                    for k in range(len(shape)):
                        r = r * shape[k] + coords[k]
                    ranks.append(r)
                g = self._add(ranks, f"mesh_{dim}")
                for r in ranks:
                    of[dim][r] = g
        return of

    def new_group(self, ranks, desc=None):
        self.make.append({"how": "group", "ranks": ranks, "desc": desc})
        return self._add(ranks, desc or "undefined")

    def subgroups(self, size):
        self.make.append({"how": "subgroups", "size": size})
        of = [0] * self.world
        for start in range(0, self.world, size):
            g = self._add(range(start, start + size), "undefined")
            for r in range(start, start + size):
                of[r] = g
        return of

    def op(self, r, g, name, n=4, dt="float32", **kw):
        self.ops[r].append(dict(g=g, op=name, n=n, dt=dt, **kw))

    def program(self, name):
        p2p = any(o["op"] in ("send", "recv", "sendrecv")
                  for ops in self.ops for o in ops)
        prog = {"schema": "backstop-hang-program/1", "name": name,
                "world": self.world, "groups": self.groups,
                "make": self.make, "p2p": p2p,
                "ranks": [{"ops": ops} for ops in self.ops]}
        prog.update(self.extra)
        return prog

    def name_of(self, g):
        return "0" if g == 0 else self.groups[g - 1]["name"]


def root(job, rank, kind, g, op, p2p=False, mismatch=None, held=None):
    """held: every stuck op the rank is missing from, where the dumps do
    not tell which of them it would have issued first (any of them may be
    named then)."""
    r = {"rank": rank, "kind": kind, "group": job.name_of(g), "op": op,
         "p2p": p2p, "mismatch": mismatch, "order_known": held is None}
    if held:
        r["held"] = [{"group": job.name_of(h), "op": o, "p2p": p2p}
                     for h, o in held]
    return r


def truth(verdict, roots=(), cycles=()):
    return {"schema": SCHEMA, "verdict": verdict, "roots": list(roots),
            "cycles": list(cycles)}


# ---- the shapes ----


def cycle3():
    """2x2x2 pp x dp x tp (init_device_mesh); each step a tp, dp and pp
    all_reduce, then a world one; rank 5 skips its dp all_reduce in step
    2 and goes on into the world one: every rank ends up waiting (the
    world #2 for 3 and 7, 3 in pp #2 for 7, 7 in dp #2 for 5, 5 in the
    world #2): root rank 5, dp #2, skipped."""
    j = Job(8)
    m = j.mesh([2, 2, 2], ["pp", "dp", "tp"])
    for step in (1, 2, 3):
        for r in range(8):
            j.op(r, m["tp"][r], "all_reduce", 4)
            if not (step == 2 and r == 5):
                j.op(r, m["dp"][r], "all_reduce", 2)
            j.op(r, m["pp"][r], "all_reduce", 3)
            j.op(r, 0, "all_reduce", 1)
    return j, truth("hang", [root(j, 5, "skipped", m["dp"][5], 2)])


def order_deadlock():
    """Two groups of the same 4 ranks; ranks 0-1 issue grad_sync then
    metrics, ranks 2-3 the reverse: nobody skipped anything."""
    j = Job(4)
    grad = j.new_group([0, 1, 2, 3], "grad_sync")
    metrics = j.new_group([0, 1, 2, 3], "metrics")
    for r in range(4):
        first, then = (grad, metrics) if r < 2 else (metrics, grad)
        j.op(r, first, "all_reduce", 4)
        j.op(r, then, "all_reduce", 2)
    return j, truth("hang", cycles=[{
        "order_deadlock": True,
        "groups": [j.name_of(grad), j.name_of(metrics)]}])


def two_roots():
    """2x2x2 pp x dp x tp, three steps of tp, dp, pp all_reduces; in the
    second, rank 1 stalls before its tp all_reduce and rank 6 before its dp
    all_reduce (of another group): two independent roots."""
    j = Job(8)
    m = j.mesh([2, 2, 2], ["pp", "dp", "tp"])
    for step in (1, 2, 3):
        for r in range(8):
            if step >= 2 and r == 1:
                continue
            j.op(r, m["tp"][r], "all_reduce", 4)
            if step >= 2 and r == 6:
                continue
            j.op(r, m["dp"][r], "all_reduce", 2)
            j.op(r, m["pp"][r], "all_reduce", 3)
    for r in (1, 6):  # a stalled rank issues nothing more
        j.ops[r] = j.ops[r][:3 if r == 1 else 4]
    return j, truth("hang", [root(j, 1, "stalled", m["tp"][1], 2),
                             root(j, 6, "stalled", m["dp"][6], 2)])


def desync_shape():
    """A job that completed: its all_reduce #2 takes 8 elements on every
    rank, as [8] on ranks 0,1,3 and [2, 4] on rank 2 (the same bytes)."""
    j = Job(4)
    for r in range(4):
        j.op(r, 0, "all_reduce", 8)
        j.op(r, 0, "all_reduce", 8, shape=[2, 4] if r == 2 else None)
        j.op(r, 0, "all_reduce", 4)
    return j, truth("desync", [root(j, 2, "mismatch", 0, 2,
                                    mismatch="shape")])


def desync_dtype():
    """A job that completed: all_reduce #2 of 16 x bf16 on rank 1 where
    the others hand it 8 x fp32 (the same bytes)."""
    j = Job(4)
    for r in range(4):
        j.op(r, 0, "all_reduce", 4)
        if r == 1:
            j.op(r, 0, "all_reduce", 16, "bfloat16")
        else:
            j.op(r, 0, "all_reduce", 8)
        j.op(r, 0, "barrier")
    return j, truth("desync", [root(j, 1, "mismatch", 0, 2,
                                    mismatch="dtype")])


def ring_wrap():
    """TORCH_FR_BUFFER_SIZE=5, TP x DP (2x2 mesh), 30 steps of a tp and a
    dp all_reduce; rank 3 stalls after its tp all_reduce of step 25: the
    job hangs at dp #25, every rank's ring long wrapped."""
    j = Job(4, fr_buffer=5)
    m = j.mesh([2, 2], ["dp", "tp"])
    for step in range(1, 31):
        for r in range(4):
            if r == 3 and step > 25:
                continue
            j.op(r, m["tp"][r], "all_reduce", 4)
            if not (r == 3 and step == 25):
                j.op(r, m["dp"][r], "all_reduce", 2)
    return j, truth("hang", [root(j, 3, "stalled", m["dp"][3], 25)])


def moe16():
    """16 ranks, pp x ep x tp = 2x4x2 (a MoE layer's experts over ep); each
    step a tp all_reduce, an ep all_to_all, a tp all_reduce, a pp
    all_reduce; ranks 5 and 7 (one ep group) are wedged before their ep
    all_to_all of step 3: roots ranks 5 and 7 at ep #3."""
    j = Job(16)
    m = j.mesh([2, 4, 2], ["pp", "ep", "tp"])
    for step in (1, 2, 3, 4):
        for r in range(16):
            if r in (5, 7) and step >= 3:
                if step == 3:
                    j.op(r, m["tp"][r], "all_reduce", 4)
                continue
            j.op(r, m["tp"][r], "all_reduce", 4)
            j.op(r, m["ep"][r], "all_to_all", 2)
            j.op(r, m["tp"][r], "all_reduce", 4)
            j.op(r, m["pp"][r], "all_reduce", 3)
    return j, truth("hang", [root(j, 5, "stalled", m["ep"][5], 3),
                             root(j, 7, "stalled", m["ep"][7], 3)])


def pipeline_1f1b():
    """A 4-stage pipeline (a new_group of every rank, p2p through the
    FlightRecorderHook), Megatron's 1F1B over 4 microbatches (its paired
    exchanges as an isend and an irecv waited for together), then a world
    all_reduce; stage 2 stalls before its 7th exchange: its neighbours
    wait for it."""
    j = Job(4)
    pp = j.new_group([0, 1, 2, 3], "pipeline")
    for r in range(4):
        for to, frm in one_f_one_b(r, 4, 4):
            j.op(r, pp, "sendrecv", 8, to=to, **{"from": frm})
        j.op(r, 0, "all_reduce", 4)
    j.ops[2] = j.ops[2][:6]
    held = p2p_held(j.program("pipeline_1f1b"), 2)
    return j, truth("hang", [root(j, 2, "stalled", pp, held[0][1], p2p=True,
                                  held=[(pp, s) for _, s in held])])


def one_f_one_b(s, stages, mbs):
    """Stage s's exchanges in Megatron's 1F1B schedule: (to, from) pairs,
    None where there is no peer (the first and last stages)."""
    prev = s - 1 if s > 0 else None
    nxt = s + 1 if s < stages - 1 else None
    warm = min(stages - s - 1, mbs)
    rest = mbs - warm
    out = []
    for _ in range(warm):
        out += [(None, prev), (nxt, None)]
    if rest:
        out.append((None, prev))
    for i in range(rest):
        out.append((nxt, nxt))  # send forward, receive backward
        out.append((prev, None) if i == rest - 1 else (prev, prev))
    for _ in range(warm):
        out += [(None, nxt), (prev, None)]
    return [(t, f) for t, f in out if t is not None or f is not None]


def no_dump_root():
    """2x2 dp x tp, rank 2 stalls before its tp all_reduce of step 2 and
    leaves no dump (a rank that died): root rank 2, no dump, tp #2."""
    j = Job(4, no_dump=[2])
    m = j.mesh([2, 2], ["dp", "tp"])
    for step in (1, 2, 3):
        for r in range(4):
            if r == 2 and step >= 2:
                continue
            j.op(r, m["tp"][r], "all_reduce", 4)
            j.op(r, m["dp"][r], "all_reduce", 2)
    return j, truth("hang", [root(j, 2, "no_dump", m["tp"][2], 2,
                                  held=[(m["tp"][2], 2), (m["dp"][2], 2)])])


def three_roots():
    """12 ranks, dp x tp = 3x4 (new_subgroups(4) for tp, a new_group per dp
    group), steps of a tp and a dp all_reduce; in step 2 rank 1 stalls
    before its tp all_reduce, rank 6 before its dp all_reduce, rank 11
    skips its dp all_reduce and goes on into the next tp one."""
    j = Job(12)
    tp = j.subgroups(4)
    dp = [0] * 12
    for k in range(4):
        g = j.new_group([k, k + 4, k + 8])
        for r in (k, k + 4, k + 8):
            dp[r] = g
    for step in (1, 2, 3):
        for r in range(12):
            if r == 1 and step >= 2:
                continue
            j.op(r, tp[r], "all_reduce", 4)
            if r == 6 and step >= 2:
                continue
            if not (r == 11 and step == 2):
                j.op(r, dp[r], "all_reduce", 2)
    j.ops[6] = j.ops[6][:3]
    return j, truth("hang", [root(j, 1, "stalled", tp[1], 2),
                             root(j, 6, "stalled", dp[6], 2),
                             root(j, 11, "skipped", dp[11], 2)])


def swap_late():
    """Two groups of the same 4 ranks, grad_sync then metrics each step;
    in step 3 ranks 2-3 issue metrics first: the earlier steps say the
    order, so ranks 2-3 ran past grad_sync #3 (an order swap, not a
    deadlock of equals)."""
    j = Job(4)
    grad = j.new_group([0, 1, 2, 3], "grad_sync")
    metrics = j.new_group([0, 1, 2, 3], "metrics")
    for step in (1, 2, 3):
        for r in range(4):
            order = (grad, metrics)
            if step == 3 and r >= 2:
                order = (metrics, grad)
            for g in order:
                j.op(r, g, "all_reduce", 4)
    return j, truth("hang", [root(j, 2, "skipped", grad, 3),
                             root(j, 3, "skipped", grad, 3)])


def missing_node():
    """8 ranks over 2 nodes, dumps gathered a folder per node; 2x4 dp x tp;
    rank 1 stalls before its dp all_reduce of step 2, and node 1's folder
    (ranks 4-7) is missing: every rank of it that its peers wait for is a
    root that left no dump."""
    j = Job(8, nodes=[[0, 1, 2, 3], [4, 5, 6, 7]], missing_nodes=[1])
    m = j.mesh([2, 4], ["dp", "tp"])
    for step in (1, 2, 3):
        for r in range(8):
            if r == 1 and step >= 2:
                if step == 2:
                    j.op(r, m["tp"][r], "all_reduce", 4)
                continue
            j.op(r, m["tp"][r], "all_reduce", 4)
            j.op(r, m["dp"][r], "all_reduce", 2)
    # dp #2: 0 with 4, 2 with 6, 3 with 7 (done); 1 stalls: 5 waits in
    # dp #2 for it, its dump gone. tp #3 of 0-3 waits for 1; 4, 6, 7 wait
    # in tp #3 for 5 (held in dp #2): no dumps. What the dumps show: 0, 2,
    # 3 wait in tp #3 for rank 1, idle; no dump shows dp #2 stuck (only
    # rank 5 waits in it), and no rank with a dump waits for ranks 4-7.
    return j, truth("hang", [root(j, 1, "stalled", m["tp"][1], 3)])


def clean_mesh():
    """2x2x2 pp x dp x tp, two steps of every op: nothing wrong."""
    j = Job(8)
    m = j.mesh([2, 2, 2], ["pp", "dp", "tp"])
    for step in (1, 2):
        for r in range(8):
            j.op(r, m["tp"][r], "all_reduce", 4)
            j.op(r, m["dp"][r], "all_gather", 2)
            j.op(r, m["pp"][r], "broadcast", 3)
            j.op(r, 0, "barrier")
    return j, truth("clean")


def run_ahead():
    """2x2 dp x tp, five steps of a tp and a dp all_reduce (of one size);
    rank 0 skips its tp all_reduce of step 2 and runs ahead: its later tp
    ops each match its peer's previous one, until its peer waits in tp #5
    alone: root rank 0, tp #2, skipped."""
    j = Job(4)
    m = j.mesh([2, 2], ["dp", "tp"])
    for step in range(1, 6):
        for r in range(4):
            if not (r == 0 and step == 2):
                j.op(r, m["tp"][r], "all_reduce", 4)
            j.op(r, m["dp"][r], "all_reduce", 2)
    return j, truth("hang", [root(j, 0, "skipped", m["tp"][0], 2)])


SHAPES = {f.__name__: f for f in (
    cycle3, order_deadlock, two_roots, desync_shape, desync_dtype, ring_wrap,
    moe16, pipeline_1f1b, no_dump_root, three_roots, swap_late, missing_node,
    clean_mesh, run_ahead)}


def jobs(names):
    out = []
    for name in names or list(SHAPES):
        j, t = SHAPES[name]()
        out.append((name, j.program(name), t))
    return out

"""A large job's Flight Recorder dumps, scaled from real ones:

    python3 fr_scale.py SRC OUT [RANKS [STEPS]]

SRC: tests/data/fr/nccl/groups, four dumps PyTorch's ProcessGroupNCCL wrote
(TP {0,1},{2,3} x DP {0,2},{1,3}, two steps of a TP and a DP all_reduce;
rank 3 skips its 2nd DP all_reduce). Writes OUT/rank_<R> for RANKS ranks
(default 4096) of the same shape: TP pairs {2k, 2k+1}, two DP groups (the
even and the odd ranks), STEPS steps (default 150: 300 entries a rank).
Each rank's dump is a copy of the real dump of the rank playing its part
(rank 0, a waiting odd rank 1, an even rank 2, the skipping last rank 3)
with only what names ranks and counts changed: pg_config's groups and
members, the entries' process_group names, their seq ids, record ids and
times, pg_status's counts. Every other key and value is PyTorch's. The
truth: the odd ranks' DP group stuck at its #STEPS, culprit rank RANKS-1.
"""

import copy
import os
import pickle
import sys


def template(r, ranks):
    """The real dump's rank whose part rank r plays."""
    if r < 2:
        return r
    if r % 2 == 0:
        return 2
    return 3 if r == ranks - 1 else 1


def names(r, ranks):
    """Template group name -> this rank's (TP: '1', '2'; DP: '3', '4')."""
    tp, dp = str(1 + r // 2), str(1 + ranks // 2 + r % 2)
    return {"0": "0", "1": tp, "2": tp, "3": dp, "4": dp}


def members(name, r, ranks):
    if name == "0":
        return list(range(ranks))
    if int(name) <= ranks // 2:
        return [r // 2 * 2, r // 2 * 2 + 1]
    return list(range(r % 2, ranks, 2))


def shift(e, seq, rec, dt):
    e = copy.copy(e)
    e["collective_seq_id"] = e["op_id"] = seq
    e["record_id"] = rec
    for k in ("time_created_ns", "time_discovered_started_ns",
              "time_discovered_completed_ns"):
        if e.get(k):
            e[k] += dt
    return e


def scaled(src, r, ranks, steps):
    # The entries are made anew below: copying them too was most of the time.
    d = copy.deepcopy({k: v for k, v in src.items() if k != "entries"})
    ren = names(r, ranks)
    d["pg_config"] = {
        ren[k]: dict(v, name=ren[k], ranks=str(members(ren[k], r, ranks)))
        for k, v in src["pg_config"].items()}
    for v in d["pg_status"].values():
        for k, x in v.items():
            if isinstance(x, int) and x > 0:
                v[k] = x + steps - 2
    first = [e for e in src["entries"] if e["collective_seq_id"] == 1]
    last = [e for e in src["entries"] if e["collective_seq_id"] == 2]
    span = last[0]["time_created_ns"] - first[0]["time_created_ns"]
    es = []
    for s in range(steps):
        for e in first if s < steps - 1 else last:
            e = shift(e, s + 1, len(es), (s - (s == steps - 1)) * span)
            e["process_group"] = (ren[e["process_group"][0]],
                                  e["process_group"][1])
            es.append(e)
    d["entries"] = es[-2000:]  # the recorder's default buffer
    return d


def main():
    src, out = sys.argv[1], sys.argv[2]
    ranks = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 150
    if ranks < 4 or ranks % 2 or steps < 2:
        sys.exit("fr_scale.py: RANKS even and at least 4, STEPS at least 2")
    real = []
    for t in range(4):
        with open(os.path.join(src, f"rank_{t}"), "rb") as f:
            real.append(pickle.load(f))
    os.makedirs(out, exist_ok=True)
    for r in range(ranks):
        d = scaled(real[template(r, ranks)], r, ranks, steps)
        with open(os.path.join(out, f"rank_{r}"), "wb") as f:
            pickle.dump(d, f, protocol=2)


if __name__ == "__main__":
    main()

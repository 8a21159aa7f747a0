"""A large job's Flight Recorder dumps, for timing `backstop analyze`:

    python3 fr_fixture.py OUT [RANKS [STEPS [TP]]]

writes OUT/rank_<R> (pickles, as PyTorch's NCCL process group writes them:
version 2.10, pg_config of the groups the rank is in, pg_status, entries
with NCCL's keys) for RANKS ranks (default 4096) of a TP x DP job (TP
ranks per tensor-parallel group, default 8): STEPS steps (default 100) of
a TP all_reduce, a DP all_reduce, a TP all_gather; in the last step the
highest rank skips its DP all_reduce, so its DP group hangs there (the
truth: culprit RANKS-1) and every other TP group hangs behind it. Plain Python,
no torch: the format is PyTorch's, the numbers made up.
"""

import os
import pickle
import sys


def entry(rec, pg, pg_id, seq, op, n, state):
    done = state == "completed"
    return {
        "frames": [], "record_id": rec, "pg_id": pg_id,
        "process_group": pg, "thread_name": "python",
        "thread_id": "140000000000000", "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": "nccl:" + op,
        "time_created_ns": 1796000000000000000 + rec * 1000,
        "input_sizes": [[n]], "input_dtypes": ["BFloat16"],
        "output_sizes": [[n]], "output_dtypes": ["BFloat16"],
        "state": state, "time_discovered_started_ns": None,
        "time_discovered_completed_ns":
            1796000000000000500 + rec * 1000 if done else None,
        "retired": done, "timeout_ms": 600000, "is_p2p": False,
    }


def dump(r, ranks, steps, tp):
    dp = ranks // tp
    tp_name, dp_name = str(1 + r // tp), str(1 + ranks // tp + r % tp)
    groups = {
        "0": ("default_pg", list(range(ranks))),
        tp_name: ("tp", list(range(r // tp * tp, r // tp * tp + tp))),
        dp_name: ("dp", list(range(r % tp, ranks, tp))),
    }
    cfg = {k: {"name": k, "desc": d, "ranks": str(m)}
           for k, (d, m) in groups.items()}
    ids = {"0": 0, tp_name: 1, dp_name: 2}
    last = ranks - 1
    es, seqs, rec = [], {k: 0 for k in groups}, 0
    for s in range(steps):
        final = s == steps - 1
        for g, op, n in ((tp_name, "all_reduce", 4096),
                         (dp_name, "all_reduce", 1024),
                         (tp_name, "_all_gather_base", 512)):
            # the last rank skips its DP all_reduce in the last step: its
            # DP peers wait in it, and each of their TP groups waits for
            # them in the all_gather after it
            if final and g == dp_name and r == last:
                continue
            hung = final and ((g == dp_name and r % tp == last % tp) or
                              (op == "_all_gather_base" and
                               r // tp != last // tp))
            seqs[g] += 1
            es.append(entry(rec, [g, groups[g][0]], ids[g], seqs[g], op, n,
                            "scheduled" if hung else "completed"))
            rec += 1
            if hung:
                break
    status = {str(ids[k]): {"last_enqueued_collective": seqs[k],
                            "last_started_collective": -1,
                            "last_completed_collective": -1}
              for k in groups}
    return {"version": "2.10", "pg_config": cfg, "pg_status": status,
            "comm_lib_version": "2.30.7", "entries": es[-2000:]}


def main():
    out = sys.argv[1]
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    tp = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    os.makedirs(out, exist_ok=True)
    for r in range(ranks):
        with open(os.path.join(out, f"rank_{r}"), "wb") as f:
            pickle.dump(dump(r, ranks, steps, tp), f, protocol=2)


if __name__ == "__main__":
    main()

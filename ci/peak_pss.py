#!/usr/bin/env python3
"""The peak memory of a command's whole process tree: every 0.3 s, the sum
of each process's PSS (/proc/PID/smaps_rollup), the largest kept. For what
a world needs with its engine processes (docs/performance.md, "What a world
needs"); /usr/bin/time's %M is the largest single process's.
  ci/peak_pss.py build/default/backstop run steady-maincast --ranks 4096 -q
"""
import subprocess, sys, time, os
if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) > 1 else 2)
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
best = (0, 0, 0)
def kids():
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split("\n")
    ch = {}
    for l in out:
        f = l.split()
        if len(f) == 2: ch.setdefault(int(f[1]), []).append(int(f[0]))
    todo, seen = [p.pid], []
    while todo:
        x = todo.pop(); seen.append(x); todo += ch.get(x, [])
    return seen
while p.poll() is None:
    tot, mx, n = 0, 0, 0
    for pid in kids():
        try:
            for l in open(f"/proc/{pid}/smaps_rollup"):
                if l.startswith("Pss:"):
                    v = int(l.split()[1]); tot += v; mx = max(mx, v); n += 1
        except Exception: pass
    if tot > best[0]: best = (tot, mx, n)
    time.sleep(0.3)
print(f"peak total PSS {best[0]} KiB ({best[0]/2**20:.2f} GiB), largest process {best[1]} KiB, {best[2]} processes; rc {p.returncode}")

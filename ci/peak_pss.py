#!/usr/bin/env python3
"""The peak memory of a command's whole process tree: every 0.3 s, the sum
of each process's PSS (/proc/PID/smaps_rollup), the largest kept. For what
a world needs with its engine processes (docs/performance.md, "What a world
needs"); /usr/bin/time's %M is the largest single process's.
  ci/peak_pss.py build/default/backstop run steady-maincast --ranks 4096 -q
"""
import os
import subprocess
import sys
import time


def children():
    """Each process's children, by parent pid (read from /proc)."""
    by_parent = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                # the parent pid is the second field after the ")" of comm
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        by_parent.setdefault(ppid, []).append(int(name))
    return by_parent


def tree(root):
    """root and every process below it."""
    by_parent = children()
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        found.append(pid)
        frontier.extend(by_parent.get(pid, []))
    return found


def pss_kib(pid):
    """The process's PSS in KiB; 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    cmd = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    total, largest, count = 0, 0, 0
    while cmd.poll() is None:
        sizes = [pss_kib(pid) for pid in tree(cmd.pid)]
        if sum(sizes) > total:
            total, largest, count = sum(sizes), max(sizes), len(sizes)
        time.sleep(0.3)
    print(f"peak total PSS {total} KiB ({total / 2**20:.2f} GiB), largest "
          f"process {largest} KiB, {count} processes; rc {cmd.returncode}")
    return cmd.returncode


if __name__ == "__main__":
    sys.exit(main())

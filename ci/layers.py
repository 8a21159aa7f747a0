#!/usr/bin/env python3
"""The include floors of the tree, checked (ctest: layers).

A part is a folder (the longest prefix below that matches). A file may
include its own part, a part of its floor that does not include it back
(no circle of parts), or a part of a floor below; never one above, however
the path is spelt (`"../harness/..."`, or a bare name found through an
include folder a target adds). Above the core, only its face (CORE_FACE)
is included, the tests and the benchmark aside. Modules (a .c and its .h; a header with no
.c calls nothing) form no circle either. And every function a .c exports
is named after its file: bs_comm_p2p.c defines bs_comm_p2p_*, never a
bare bs_comm_* (the name says where to look).

--picture prints the picture of the imports (a Mermaid flowchart of the
parts, floor by floor, with an arrow for each part a part includes) that
docs/imports.md holds; --picture-check FILE fails when FILE is not that
picture (the picture went stale).

Usage: layers.py ROOT [--self-test | --picture | --picture-check FILE]"""
import os
import re
import subprocess
import sys

# The one table of floors, top first. Every source file belongs to a part.
# dumps/ sits beside record/, below report/ (architecture.md has it a floor
# higher): report/bs_artifacts.c writes the flight-recorder pickles with it,
# and it needs nothing above proc/ and util/.
FLOORS = [
    ["tests"],
    ["cli", "bench", "scenarios"],
    ["harness/plan", "harness/explore"],
    ["harness/run"],
    ["harness/driver"],
    ["harness/oracles", "harness/report"],
    ["harness/verdict", "harness/record", "harness/dumps"],
    ["harness/catalog", "harness/cfg", "harness/proc", "harness/util"],
    ["core/bs_actor", "core/bs_core_testing"],
    ["core/sync"],
    ["core/backup"],
    ["core/train"],
    ["core/model", "core/comm"],
    ["core/memsaver"],
    ["core/dev"],
    ["faults", "kernels"],
    ["base"],
]
# Where a path-qualified include ("comm/bs_comm.h") is looked up: the
# folders the build puts on include paths.
ROOTS = ["base", "faults", "kernels", "core", "harness", "cli", "bench",
         "tests"]
SOURCES = re.compile(r"\.(c|h|def|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
FLOOR = {p: i for i, ps in enumerate(FLOORS) for p in ps}
# Files of a part that live outside its folder (none today).
MEMBERS = {}
# The core's face: the only core headers the floors above include. The
# white-box tests and the benchmark (it times the core's parts) see the
# core whole. bs_core_testing.h carries the testing parts of a few of the
# core's own headers.
CORE_FACE = {
    "core/bs_actor.h", "core/sync/bs_sync_result.h",
    "core/sync/bs_engine_main.h", "core/comm/bs_comm.h",
    "core/dev/bs_dev.h", "core/comm/front/bs_comm_report.h",
    "core/model/bs_model.h", "core/model/bs_config.h",
    "core/bs_core_testing.h",
}
SEES_CORE_WHOLE = ("tests", "bench")
# Headers private to some folders of a part: who may include them. The
# world's structures are the front's and the simulator's (the world's own
# machinery); the NCCL backend reads the front through bs_comm_backend.h.
PRIVATE = {
    "core/comm/front/bs_comm_state.h": ("core/comm/front/",
                                        "core/comm/backend/sim/", "tests/"),
}


def part_of(path):
    if path in MEMBERS:
        return MEMBERS[path]
    best = None
    for p in FLOOR:
        if (path == p or path.startswith(p + "/") or
                os.path.splitext(path)[0] == p or
                path.startswith(p + "_")) and (best is None or
                                               len(p) > len(best)):
            best = p
    return best


def sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True,
                             capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), root)
               for d, _, fs in os.walk(root) if "/build" not in d
               for f in fs]
    return sorted(f for f in out if SOURCES.search(f) and
                  not f.startswith("tests/data/"))


def resolve(root, src, inc, known):
    here = os.path.dirname(src)
    cands = [os.path.normpath(os.path.join(here, inc))]
    if not inc.startswith("."):
        cands += [os.path.normpath(os.path.join(r, inc)) for r in ROOTS]
    for c in cands:
        if c in known:
            return c
    # Through a folder some target adds; else a system or outside header
    # (nccl.h, fiu.h). Source names are unique in the tree.
    return known.get(os.path.basename(inc))


def module(path):
    return os.path.splitext(path)[0]


def cycle(graph):
    """One circle of graph (a list of nodes), or None."""
    state = {}
    for start in sorted(graph):
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
                path.append(nxt)
    return None


def check(root, files, extra=(), graph=None):
    known = {f: f for f in files}
    known.update({os.path.basename(f): f for f in files})
    errors = []
    parts = {} if graph is None else graph
    mods = {}
    edges = []
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            edges.append((f, m.group(1), text.count("\n", 0, m.start()) + 1))
    edges += list(extra)
    # A header of no .c of its own calls nothing: no circle runs through it.
    impl = {module(f) for f in files if f.endswith((".c", ".cu"))}
    for f in files:
        if part_of(f) is None:
            errors.append(f"{f}: in no floor of ci/layers.py's FLOORS")
    for f, inc, line in edges:
        t = resolve(root, f, inc, known)
        if t is None:
            continue
        a, b = part_of(f), part_of(t)
        if a is None or b is None:
            continue
        if t in PRIVATE and not f.startswith(PRIVATE[t]):
            errors.append(f'{f}:{line}: includes "{inc}", private to '
                          f"{', '.join(PRIVATE[t])} (ci/layers.py PRIVATE)")
        if module(f) != module(t) and module(t) in impl:
            mods.setdefault(module(f), set()).add(module(t))
        if a == b:
            continue
        parts.setdefault(a, set()).add(b)
        if FLOOR[b] < FLOOR[a]:
            errors.append(f'{f}:{line}: includes "{inc}" ({b}), a floor '
                          f"above {a}")
        elif (t.startswith("core/") and not a.startswith("core/") and
              t not in CORE_FACE and a not in SEES_CORE_WHOLE):
            errors.append(f'{f}:{line}: includes "{inc}", a header of the '
                          f"core's own (its face: ci/layers.py CORE_FACE)")
    for g, what in (({a: set(b) for a, b in parts.items()}, "parts"),
                    (mods, "modules")):
        for _ in range(20):  # each circle once, by cutting an edge of it
            c = cycle(g)
            if not c:
                break
            errors.append(f"a circle of {what}: " + " -> ".join(c))
            g[c[0]].discard(c[1])
    return errors


def picture(root, files):
    """The imports as a Mermaid flowchart: one box a floor (top first), a
    node a part, an arrow a part that includes another's headers."""
    parts = {}
    errors = check(root, files, graph=parts)
    parts.pop("tests", None)  # the tests see everything: no floor of theirs
    ident = {p: re.sub(r"\W", "_", p) for p in FLOOR}
    used = {p for p in parts} | {q for qs in parts.values() for q in qs}
    arrows = sum(len(qs) for qs in parts.values())
    top = sum(1 for a, qs in parts.items() for b in qs
              if not a.startswith("core") and not b.startswith("core") and
              FLOOR[b] < FLOOR["core/bs_actor"] and FLOOR[a] > 0 and
              (a.startswith("harness") or b.startswith("harness")))
    up = sum(1 for a, qs in parts.items() for b in qs if FLOOR[b] < FLOOR[a])
    lines = ["# The imports, floor by floor", "",
             "Generated by `ci/layers.py . --picture` from the tree's "
             "`#include`s (ctest `layers_picture` fails when this file is "
             "stale). A box is a floor of ci/layers.py's FLOORS, top first; "
             "an arrow is a part that includes a header of another part.",
             "", f"{len(used)} parts (the tests aside), {arrows} arrows, "
             f"{up} running up, {len(errors)} errors of the floor check; "
             f"harness/ and its users (cli, bench, scenarios): {top} arrows.",
             "",
             "```mermaid", "flowchart TD"]
    for i, floor in enumerate(FLOORS):
        members = [p for p in floor if p in used]
        if not members:
            continue
        lines.append(f'  subgraph floor{i}["floor {i}"]')
        lines += [f'    {ident[p]}["{p}"]' for p in members]
        lines.append("  end")
    for a in sorted(parts, key=lambda p: (FLOOR[p], p)):
        for b in sorted(parts[a], key=lambda p: (FLOOR[p], p)):
            lines.append(f"  {ident[a]} --> {ident[b]}")
    lines.append("```")
    return "\n".join(lines) + "\n"


# A function definition at the start of a line: its head up to the name.
DEF_HEAD = re.compile(r"^([A-Za-z_][\w \t*]*?)\b([A-Za-z_]\w*)\s*\(", re.M)
NOT_DEFS = {"if", "for", "while", "switch", "return", "sizeof"}


def blank_comments(text):
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  text, flags=re.S)


def exported(text):
    """(name, line) of each function text defines that is not static."""
    text = blank_comments(text)
    for m in DEF_HEAD.finditer(text):
        head, name = m.group(1).split(), m.group(2)
        if not head or "static" in head or head[0] in ("typedef", "return") \
                or name in NOT_DEFS or name == "main":
            continue
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        if text[i + 1:].lstrip().startswith("{"):
            yield name, text.count("\n", 0, m.start()) + 1


def names(root, files, extra=()):
    """Exported functions not named after their file (tests aside: their
    functions are the cases)."""
    errors = []
    texts = [(f, open(os.path.join(root, f), errors="replace").read())
             for f in files if f.endswith((".c", ".cu")) and
             not f.startswith("tests/")]
    for f, text in texts + list(extra):
        stem = os.path.splitext(os.path.basename(f))[0]
        for name, line in exported(text):
            if name != stem and not name.startswith(stem + "_"):
                errors.append(f"{f}:{line}: {name} is exported without its "
                              f"file's prefix {stem}_")
    return errors


def self_test(root, files):
    """Each planted include must be caught: the check can fail."""
    plants = [
        [("core/bs_actor.c", "../harness/run/bs_parent.h", 1)],
        [("core/comm/front/bs_comm.c", "backup/bs_backuper.h", 1)],
        [("harness/proc/bs_fork.c", "run/bs_parent.h", 1)],
        [("base/bs_err.c", "../faults/bs_fault.h", 1)],
        [("core/dev/bs_dev.c", "bs_parent.h", 1)],
        [("harness/run/bs_hangdump.c", "run/bs_child.h", 1),
         ("harness/run/bs_child.c", "run/bs_hangdump.h", 1)],
        [("harness/driver/bs_driver.c", "memsaver/bs_ms.h", 1)],
        [("scenarios/sc_source_joins.c", "backup/bs_source.h", 1)],
        [("cli/bs_main.c", "sync/bs_engine.h", 1)],
        [("core/comm/backend/nccl/bs_comm_nccl.c",
          "comm/front/bs_comm_state.h", 1)],
    ]
    bad = 0
    before = set(check(root, files))
    for p in plants:
        if not set(check(root, files, p)) - before:
            print(f"layers: not caught: {p}", file=sys.stderr)
            bad += 1
    named = set(names(root, files))
    for f, text in [("core/comm/front/bs_comm_p2p.c",
                     "bs_status bs_comm_send(bs_comm *c,\n int peer) {\n}\n"),
                    ("harness/dumps/bs_dumps_judge.c",
                     "void bs_dumps_view_free(bs_dumps_view *v) {}\n")]:
        if not set(names(root, files, [(f, text)])) - named:
            print(f"layers: not caught: {f}: {text!r}", file=sys.stderr)
            bad += 1
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = sources(root)
    if "--self-test" in sys.argv:
        return 1 if self_test(root, files) else 0
    if "--picture" in sys.argv:
        sys.stdout.write(picture(root, files))
        return 0
    if "--picture-check" in sys.argv:
        path = sys.argv[sys.argv.index("--picture-check") + 1]
        with open(path) as fh:
            if fh.read() == picture(root, files):
                return 0
        print(f"layers: {path} is stale: regenerate it with "
              f"ci/layers.py . --picture > {path}", file=sys.stderr)
        return 1
    errors = check(root, files) + names(root, files)
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

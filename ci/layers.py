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
bare bs_comm_* (the name says where to look). The parsers of a run's
strings (PARSERS: a --set, a --fault, a model) are included by the planner
and above only: the floors of the harness below harness/plan, the dumps
reader and the scenarios read the typed run.

--picture prints the picture of the imports (a Mermaid flowchart of the
parts, floor by floor, with an arrow for each part a part includes) that
docs/imports.md holds; --picture-check FILE fails when FILE is not that
picture (the picture went stale).

--sizes prints the function sizes (median, mean, 90th percentile).
--readme prints the README's diagram of the floors (FLOORS and SAY);
--readme-check FILE fails when FILE's is stale, --readme-fix FILE
rewrites it.

Usage: layers.py ROOT [--self-test | --picture | --picture-check FILE |
                       --sizes | --readme | --readme-check FILE |
                       --readme-fix FILE]"""
import functools
import os
import re
import subprocess
import sys

# The one table of floors, top first. Every source file belongs to a part.
# dumps/ (the Flight Recorder reader, analyze, replay) is a part of its own
# below the whole harness: report/bs_artifacts.c writes the flight
# recorders' pickles with it and run/ reads its reports, while it needs
# only base/ and the core's face.
FLOORS = [
    ["tests"],
    ["cli", "bench", "scenarios"],
    ["harness/plan", "harness/explore"],
    ["harness/run"],
    ["harness/driver"],
    ["harness/oracles", "harness/report"],
    ["harness/result", "harness/record"],
    ["harness/catalog"],
    ["dumps"],
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
# What each part holds, in a line: the README's diagram of the floors
# (--readme) is made from FLOORS and this.
SAY = {
    "cli": "the commands: options, help, exit statuses",
    "bench": "`backstop bench`: ratios to ceilings of the same run",
    "scenarios": "sc_*.c, one scenario each, self-registered",
    "harness/plan": "options -> typed runs (bs_run), each resolved once",
    "harness/explore": "sweep, fuzz, the kill matrix, the batch runner",
    "harness/run": "parent -fork-> child: fibers|threads, part, spawn",
    "harness/driver": "arms faults, sets mutants, drives each rank's actor",
    "harness/oracles": "the invariants, from the record only; the judge",
    "harness/report": "table, JSON, JUnit; artifacts (FR pickles, trace)",
    "harness/result": "a run's result, verdict, armed faults; JSON, packed",
    "harness/record": "the run record: each rank's phases and their state",
    "harness/catalog": "the scenarios, the typed run (bs_run), the launcher",
    "dumps": "Flight Recorder dumps: read, analyze, replay",
    "core/bs_actor": "init, sleep, update_weights, wake_up, switch_model",
    "core/bs_core_testing": "the hooks the harness observes the core by",
    "core/sync": "weight sync -> engine process (wire, SHA256)",
    "core/backup": "Normal | MainCast (cast, all-gather, extras)",
    "core/train": "distributed optimizer, param sync",
    "core/model": "specs, params, DDP buffers, config validation",
    "core/comm": "front/ (flight recorder, watchdog) | sim | nccl",
    "core/memsaver": "tagged regions, pause/resume, the paused-read trap",
    "core/dev": "bs_dev: host (mmap, PROT_NONE) | cuda (cuMem VMM)",
    "faults": "libfiu points and mutant switches, one .def row each",
    "kernels": "cast, Adam, grad, bit flip, poison: C | CUDA",
    "base": "status, errors, JSON, fork, SHA256, clocks, scheduler",
}
# The library (CMakeLists.txt's bs_part) each part is built into.
LIBRARY = [("core/", "bs_core"), ("harness/", "bs_harness"),
           ("scenarios", "(objects)"), ("tests", "(tests)")]
# Where a path-qualified include ("comm/bs_comm.h") is looked up: the
# folders the build puts on include paths.
ROOTS = [".", "base", "faults", "kernels", "core", "harness", "cli", "bench",
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
    "core/sync/bs_engine_main.h", "core/sync/bs_engine_keep.h",
    "core/comm/bs_comm.h",
    "core/dev/bs_dev.h", "core/comm/front/bs_comm_report.h",
    "core/model/bs_model.h", "core/model/bs_config.h",
    "core/bs_core_testing.h", "core/comm/bs_meet.h",
    "core/model/bs_model_parse.h", "core/model/bs_config_parse.h",
}
# Staged for the face's headers, which include them (included from above
# by nothing else).
CORE_CARRIED = {
    "core/backup/bs_source.h", "core/comm/front/bs_world_running.h",
    "core/memsaver/bs_trap.h",
}
SEES_CORE_WHOLE = ("tests", "bench")
# The harness's face: the headers cli, bench and the scenarios include
# (and, below the line, those these carry, staged for them but included
# from above by nothing else). The build stages exactly these
# (CMakeLists.txt); the tests see the harness whole.
HARNESS_FACE = {
    "harness/catalog/bs_scenario.h", "harness/catalog/bs_launcher.h",
    "harness/explore/bs_fuzz_campaign.h", "harness/explore/bs_kill_matrix.h",
    "harness/explore/bs_sweep_campaign.h", "harness/oracles/bs_expect.h",
    "harness/oracles/bs_oracle.h", "harness/plan/bs_footprint.h",
    "harness/plan/bs_opts.h", "harness/plan/bs_plan.h",
    "harness/record/bs_schedule.h", "harness/report/bs_report.h",
    "harness/run/bs_nccl_plan.h", "harness/run/bs_run_all.h",
}
HARNESS_CARRIED = {
    "harness/catalog/bs_run.h", "harness/explore/bs_batch.h",
    "harness/explore/bs_fuzz.h", "harness/explore/bs_sweep.h",
    "harness/plan/bs_models.h", "harness/record/bs_record.h",
    "harness/result/bs_result.h",
}
# The dumps reader's face: what the harness, cli and bench include of it.
DUMPS_FACE = {
    "dumps/bs_dumps.h", "dumps/bs_dumps_finding.h", "dumps/bs_dumps_report.h",
    "dumps/bs_replay.h", "dumps/bs_corpus.h",
}
# A part's face: (the folder it guards, the headers others may include,
# the parts that see it whole, the name of the list for messages, its
# library, the headers staged beside the face).
FACES = [
    ("core/", CORE_FACE, SEES_CORE_WHOLE, "CORE_FACE", "bs_core",
     CORE_CARRIED),
    ("harness/", HARNESS_FACE, ("tests",), "HARNESS_FACE", "bs_harness",
     HARNESS_CARRIED),
    ("dumps/", DUMPS_FACE, ("tests",), "DUMPS_FACE", "bs_dumps", set()),
]
# The parsers of a run's strings: settings (--set), fault specs (--fault,
# a scenario's, sweep's and fuzz's) and models. A run is resolved once, by
# the planner (harness/plan, and harness/explore on its floor) or above it
# (the commands, the benchmark); below it every floor reads the typed run
# (harness/catalog/bs_run.h), and so do the scenarios. The core and the
# fault layer hold the parsers and may include them.
PARSERS = {
    "core/model/bs_config_parse.h", "core/model/bs_model_parse.h",
    "faults/bs_fault_parse.h",
}
PLANNER = "harness/plan"


def below_planner(part):
    """Whether a part reads only the typed run: a harness floor below the
    planner, the dumps reader, a scenario."""
    if part == "scenarios":
        return True
    return (part.startswith("harness/") or part == "dumps") and \
        FLOOR[part] > FLOOR[PLANNER]


# Headers private to some folders of a part: who may include them. The
# world's structures are the front's and the simulator's (the world's own
# machinery); the NCCL backend reads the front through bs_comm_backend.h.
PRIVATE = {
    "core/comm/front/bs_comm_state.h": ("core/comm/front/",
                                        "core/comm/backend/sim/", "tests/"),
}


# A path's part: a pure function of it (the tables above are constants),
# asked some 47,000 times by the self-test's 17 checks.
@functools.lru_cache(maxsize=None)
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
            return known[c]
    # Through a folder some target adds; else a system or outside header
    # (nccl.h, fiu.h). Source names are unique in the tree.
    return known.get(os.path.basename(inc))


@functools.lru_cache(maxsize=None)  # the self-test asks some 100,000 times
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


def outside_face(f, line, inc, t, a):
    """An include of a part's own header from outside that part."""
    for folder, face, whole, name, _, _ in FACES:
        if (t.startswith(folder) and not a.startswith(folder) and
                t not in face and a not in whole):
            return [f'{f}:{line}: includes "{inc}", a header of '
                    f"{folder[:-1]}'s own (its face: ci/layers.py {name})"]
    return []


def staged(root):
    """The public headers CMakeLists.txt stages for each library."""
    with open(os.path.join(root, "CMakeLists.txt")) as fh:
        text = re.sub(r"#[^\n]*", "", fh.read())
    out = {}
    for m in re.finditer(r"bs_part\((\w+)\s+(\S+)(.*?)\)", text, re.S):
        heads = re.search(r"PUBLIC_HEADERS(.*?)(?:DEPS|$)", m.group(3), re.S)
        out[m.group(1)] = {f"{m.group(2)}/{h}" for h in
                           (heads.group(1).split() if heads else [])}
    return out


def faces_staged(root):
    """The build stages a face exactly as FACES lists it: the compiler
    holds the floors the list states."""
    errors = []
    libs = staged(root)
    for folder, face, _, name, lib, carried in FACES:
        want, have = face | carried, libs.get(lib, set())
        for h in sorted(want - have):
            errors.append(f"CMakeLists.txt: {lib} does not stage {h} "
                          f"(ci/layers.py {name})")
        for h in sorted(have - want):
            errors.append(f"CMakeLists.txt: {lib} stages {h}, which "
                          f"ci/layers.py {name} does not list")
    return errors


_READ = {}


@functools.lru_cache(maxsize=None)  # the checks read each source 2-3 times
def text_of(path):
    with open(path, errors="replace") as fh:
        return fh.read()


def read_includes(root, files):
    """Every include of files as (file, include, line), the files by path
    and by name, and a memo of resolved includes: read once (the self-test
    checks the tree 17 times)."""
    key = (root, tuple(files))
    if key not in _READ:
        known = {f: f for f in files}
        known.update({os.path.basename(f): f for f in files})
        edges = []
        for f in files:
            text = text_of(os.path.join(root, f))
            for m in INCLUDE.finditer(text):
                edges.append((f, m.group(1),
                              text.count("\n", 0, m.start()) + 1))
        _READ[key] = (edges, known, {})
    return _READ[key]


def check(root, files, extra=(), graph=None):
    edges, known, memo = read_includes(root, files)
    errors = []
    parts = {} if graph is None else graph
    mods = {}
    edges = edges + list(extra)
    # A header of no .c of its own calls nothing: no circle runs through it.
    impl = {module(f) for f in files if f.endswith((".c", ".cu"))}
    for f in files:
        if part_of(f) is None:
            errors.append(f"{f}: in no floor of ci/layers.py's FLOORS")
    for f, inc, line in edges:
        k = (os.path.dirname(f), inc)
        if k not in memo:
            memo[k] = resolve(root, f, inc, known)
        t = memo[k]
        if t is None:
            continue
        a, b = part_of(f), part_of(t)
        if a is None or b is None:
            continue
        if t in PARSERS and below_planner(a):
            errors.append(f'{f}:{line}: includes "{inc}", a parser of a '
                          f"run's strings, below {PLANNER} (ci/layers.py "
                          f"PARSERS: read the typed run, bs_run.h)")
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
        else:
            errors += outside_face(f, line, inc, t, a)
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


def library(part):
    for prefix, lib in LIBRARY:
        if part.startswith(prefix):
            return lib
    return "bs_" + part


README_BEGIN = "<!-- ci/layers.py --readme: begin -->"
README_END = "<!-- ci/layers.py --readme: end -->"


def readme():
    """The floors as the README shows them: a row a part, its library and
    what it holds; a floor includes its own (no circle) and those below."""
    rows = [README_BEGIN, "```",
            "floor  part                  library     holds",
            "-----  --------------------  ----------  " + "-" * 52]
    for i, floor in enumerate(FLOORS):
        if floor == ["tests"]:
            continue
        for k, p in enumerate(floor):
            mark = f"{i:>3} v" if k == 0 else "     "
            rows.append(f"{mark}  {p:<20}  {library(p):<10}  {SAY[p]}")
    rows += ["```", README_END]
    return "\n".join(rows) + "\n"


def readme_check(path):
    with open(path) as fh:
        text = fh.read()
    a, b = text.find(README_BEGIN), text.find(README_END)
    if a < 0 or b < 0:
        return f"{path}: no {README_BEGIN} ... {README_END} block"
    if text[a:b + len(README_END) + 1] != readme():
        return (f"{path}: the floors' diagram is stale: regenerate it with "
                f"ci/layers.py . --readme-fix {path}")
    return None


# A function definition at the start of a line: its head up to the name.
DEF_HEAD = re.compile(r"^([A-Za-z_][\w \t*]*?)\b([A-Za-z_]\w*)\s*\(", re.M)
NOT_DEFS = {"if", "for", "while", "switch", "return", "sizeof"}
PARENS = re.compile(r"[()]")


@functools.lru_cache(maxsize=None)  # a source's text is blanked twice
def blank_comments(text):
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  text, flags=re.S)


# A comment, or a string or character literal (escapes honoured), whichever
# starts first: a "{" in a format string is no brace of the code.
_LITERAL = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                      r"'(?:\\.|[^'\\\n])*'", re.S)


def blank_literals(text):
    """Comments and the insides of literals as blanks (lines kept)."""
    def blank(m):
        s = m.group(0)
        if s[0] in "\"'":
            return s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]
        return re.sub(r"[^\n]", " ", s)
    return _LITERAL.sub(blank, text)


@functools.lru_cache(maxsize=None)  # the self-test asks of each file 5 times
def exported(text):
    """(name, line) of each function text defines that is not static."""
    return tuple(exported_in(text))


def exported_in(text):
    text = blank_comments(text)
    for m in DEF_HEAD.finditer(text):
        head, name = m.group(1).split(), m.group(2)
        if not head or "static" in head or head[0] in ("typedef", "return") \
                or name in NOT_DEFS or name == "main":
            continue
        depth, i = 0, len(text)
        for p in PARENS.finditer(text, m.end() - 1):
            depth += 1 if p.group() == "(" else -1
            if depth == 0:
                i = p.start()
                break
        if text[i + 1:].lstrip().startswith("{"):
            yield name, text.count("\n", 0, m.start()) + 1


def names(root, files, extra=()):
    """Exported functions not named after their file (tests aside: their
    functions are the cases)."""
    errors = []
    texts = [(f, text_of(os.path.join(root, f)))
             for f in files if f.endswith((".c", ".cu")) and
             not f.startswith("tests/")]
    for f, text in texts + list(extra):
        stem = os.path.splitext(os.path.basename(f))[0]
        for name, line in exported(text):
            if name != stem and not name.startswith(stem + "_"):
                errors.append(f"{f}:{line}: {name} is exported without its "
                              f"file's prefix {stem}_")
    return errors


@functools.lru_cache(maxsize=None)  # the self-test reads them twice
def code_of(path):
    """A source's text, comments and includes blanked: no call there."""
    return INCLUDE.sub("", blank_comments(text_of(path)))


@functools.lru_cache(maxsize=None)  # the self-test reads each text twice
def named_in(text):
    """The bs_ names a code's text uses."""
    return frozenset(re.findall(r"\b(bs_\w+)\b", text))


def calls(root, files, extra=()):
    """Circles of modules through what their code uses: a .c that names a
    function another .c defines (a call or a pointer taken) uses that
    module, whatever header declares it (an aggregate header of no .c of
    its own hides nothing). Tests aside."""
    texts = {f: code_of(os.path.join(root, f))
             for f in files if f.endswith((".c", ".cu")) and
             not f.startswith("tests/")}
    texts.update({f: INCLUDE.sub("", blank_comments(t)) for f, t in extra})
    defs = {name: f for f, t in texts.items() for name, _ in exported(t)}
    uses = {}
    for f, t in texts.items():
        for name in named_in(t):
            d = defs.get(name)
            if d and d != f:
                uses.setdefault(module(f), set()).add(module(d))
    errors = []
    for _ in range(40):  # each circle once, by cutting an edge of it
        c = cycle(uses)
        if not c:
            break
        errors.append("a circle of calls: " + " -> ".join(c))
        uses[c[0]].discard(c[1])
    return errors


def sizes(root, files):
    """Lines of every function defined outside tests/ (static ones too),
    from its head to its closing brace, comments and literals blanked."""
    out = []
    for f in files:
        if not f.endswith((".c", ".cu")) or f.startswith("tests/"):
            continue
        out.extend(sizes_in(blank_literals(text_of(os.path.join(root, f)))))
    return sorted(out)


def sizes_in(text):
    """Each function's lines in text (comments and literals blank)."""
    out = []
    for m in DEF_HEAD.finditer(text):
        head = m.group(1).split()
        if not head or head[0] in ("typedef", "return") or \
                m.group(2) in NOT_DEFS:
            continue
        i = text.find(")", m.end())
        rest = text[i + 1:].lstrip() if i >= 0 else ""
        if not rest.startswith("{"):
            continue
        start = text.index("{", i)
        depth, j = 0, start
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        out.append(text.count("\n", m.start(), j) + 1)
    return out


def self_test(root, files):
    """Each planted include must be caught: the check can fail."""
    plants = [
        [("core/bs_actor.c", "../harness/run/bs_parent.h", 1)],
        [("core/comm/front/bs_comm.c", "backup/bs_backuper.h", 1)],
        [("base/bs_fork.c", "run/bs_parent.h", 1)],
        [("base/bs_err.c", "../faults/bs_fault.h", 1)],
        [("core/dev/bs_dev.c", "bs_parent.h", 1)],
        [("harness/run/bs_hangdump.c", "run/bs_child.h", 1),
         ("harness/run/bs_child.c", "run/bs_hangdump.h", 1)],
        [("harness/driver/bs_driver.c", "memsaver/bs_memsaver.h", 1)],
        [("scenarios/sc_source_joins.c", "backup/bs_source.h", 1)],
        [("cli/bs_main.c", "sync/bs_engine.h", 1)],
        [("core/comm/backend/nccl/bs_comm_nccl.c",
          "comm/front/bs_comm_state.h", 1)],
        # Outside a face: the harness's, the dumps reader's.
        [("cli/bs_cmd_run.c", "run/bs_child_judge.h", 1)],
        [("harness/report/bs_artifacts.c", "dumps/bs_dumps_int.h", 1)],
        # The dumps reader above the harness.
        [("dumps/bs_dumps.c", "record/bs_record.h", 1)],
        # A parser below the planner: a run's driver, oracle, a scenario.
        [("harness/driver/bs_driver.c", "model/bs_config_parse.h", 1)],
        [("harness/result/bs_armed.c", "bs_fault_parse.h", 1)],
        [("scenarios/sc_corrupt_extras.c", "model/bs_model_parse.h", 1)],
    ]
    bad = 0
    before = set(check(root, files))
    for p in plants:
        if not set(check(root, files, p)) - before:
            print(f"layers: not caught: {p}", file=sys.stderr)
            bad += 1
    # A circle of calls whose headers are an aggregate of no .c: the replay
    # calls the read-back, which would call the replay back.
    circles = set(calls(root, files))
    plant = ("dumps/bs_replay_read.c",
             open(os.path.join(root, "dumps/bs_replay_read.c")).read() +
             "void bs_replay_read_x(void) { bs_replay_run(0, 0, 0); }\n")
    if not set(calls(root, files, [plant])) - circles:
        print("layers: not caught: a circle of calls through "
              "bs_replay_read.c", file=sys.stderr)
        bad += 1
    named = set(names(root, files))
    for f, text in [("core/comm/front/bs_comm_p2p.c",
                     "bs_status bs_comm_send(bs_comm *c,\n int peer) {\n}\n"),
                    ("dumps/bs_dumps_judge.c",
                     "void bs_dumps_view_free(bs_dumps_view *v) {}\n")]:
        if not set(names(root, files, [(f, text)])) - named:
            print(f"layers: not caught: {f}: {text!r}", file=sys.stderr)
            bad += 1
    # Braces in literals and comments are not the code's: 5 lines, not 2.
    planted = ('static int f(void) {\n  puts("}");\n  /* } */ putchar(\'}\');'
               '\n  return 0;\n}\n')
    if sizes_in(blank_literals(planted)) != [5]:
        print("layers: --sizes counts braces of literals: "
              f"{sizes_in(blank_literals(planted))}", file=sys.stderr)
        bad += 1
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    if "--readme" in sys.argv:
        sys.stdout.write(readme())
        return 0
    if "--readme-fix" in sys.argv or "--readme-check" in sys.argv:
        fix = "--readme-fix" in sys.argv
        path = sys.argv[sys.argv.index("--readme-fix" if fix else
                                       "--readme-check") + 1]
        err = readme_check(path)
        if err and fix:
            with open(path) as fh:
                text = fh.read()
            a, b = text.find(README_BEGIN), text.find(README_END)
            with open(path, "w") as fh:
                fh.write(text[:a] + readme() +
                         text[b + len(README_END) + 1:])
            return 0
        if err:
            print(err, file=sys.stderr)
        return 1 if err else 0
    files = sources(root)  # what the readme's modes above need not list
    if "--self-test" in sys.argv:
        return 1 if self_test(root, files) else 0
    if "--sizes" in sys.argv:
        n = sizes(root, files)
        print(f"{len(n)} functions outside tests/: median "
              f"{n[len(n) // 2]} lines, mean {sum(n) / len(n):.1f}, 90% at "
              f"or under {n[int(len(n) * 0.9)]}, longest {n[-1]}")
        return 0
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
    errors = (check(root, files) + names(root, files) + faces_staged(root) +
              calls(root, files) +
              [f"ci/layers.py: part {p} has no line in SAY" for ps in FLOORS
               for p in ps if p != "tests" and p not in SAY] +
              [f"ci/layers.py: SAY's {p} is no part of FLOORS" for p in SAY
               if p not in FLOOR])
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

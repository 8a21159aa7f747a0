#!/usr/bin/env python3
"""Citations of documents in the tree, checked (ctest: citations).

A citation is the name of a Markdown document, `docs/NAME.md` (or any
path in the repository, `tests/data/fr/README.md`), with an optional
section right after it, in the forms the tree uses:

    docs/behavior.md §4          docs/behavior.md §5-6, §7.2
    docs/behavior.md section 4   docs/cli.md "Fault spec"
    docs/cli.md `run`            docs/performance.md, "Worlds of ..."
    docs/cli.md's JSON report    [text](docs/hang-report.md#anchor)

A `§N` with no document before it on its line (or the line above) is a
section of docs/behavior.md, the only document numbered by §. A quoted
section names a heading by its text (the heading may go on: "Worlds of
thousands of ranks" is the heading "Worlds of thousands of ranks (issue
23)"); a § section is a heading that starts with it (`## §4 ...`,
`### §7.2 ...`); an #anchor is a heading's GitHub anchor.

Every tracked (or new, not ignored) source file is read: C, headers,
CUDA, .def, Python, shell, CMake and Markdown, docs/ included. It fails
(exit 1, one line per bad citation: FILE:LINE: what is wrong) when

- the cited document is not a file in the repository (a path outside
  it, ../shared/spec/..., is not one either);
- the cited section is not a heading of it;
- a document of docs/ is cited by its bare name outside docs/
  (`behavior.md §4`): a newcomer looks for it at the root. --fix writes
  the repository path (`docs/behavior.md §4`). Inside docs/ a bare name
  is a sibling, as a Markdown link reads it.

Citations inside string literals (C, and Python) are what the program
prints (an explain text, a known-failure note): --fix leaves them alone,
so that report bytes stay the same, and the checker accepts a bare name
there as long as docs/NAME.md and its section exist.

--fix rewrites only the bare name (C comments cannot be reflowed by a
script: clang-format keeps lines to 80 columns), and prints every line
it made longer than 80 columns, to be reflowed by hand. --list prints
every citation found. --self-test plants broken citations (a missing
document, a missing section of an existing one, a bare name) in memory
and fails unless each is caught and the good ones are not.

Usage: citations.py ROOT [--self-test | --fix | --list]"""
import io
import os
import posixpath
import re
import subprocess
import sys
import tokenize

SCANNED = re.compile(r"(\.(c|h|cu|cuh|def|py|sh|md|cmake)|(^|/)CMakeLists\.txt)$")
C_LIKE = re.compile(r"\.(c|h|cu|cuh|def)$")
SKIP_DIRS = {".git", "build", "backstop-artifacts"}
# Not read: this script, whose docstring shows the forms and whose
# self-test plants broken citations on purpose.
NOT_READ = {"ci/citations.py"}
# The document every bare § refers to.
NUMBERED = "docs/behavior.md"
COLUMNS = 80

DOC = re.compile(r"(?<![\w/.\-])((?:[\w.\-]+/)*[\w\-]+\.md)(?![\w])")
SEC = r"\d+(?:\.\d+)*"
SECTION = re.compile(r"§(%s)(?:[-–](%s))?" % (SEC, SEC))
# What may follow a document's name, and name its section.
TAIL = re.compile(
    r"(?P<s>'s)?(?:"
    r"\#(?P<anchor>[\w\-]+)"
    r"|[ \t]+§(?P<sec>%s)(?:[-–](?P<sec_to>%s))?"
    r"|[ \t]+section[ \t]+(?P<secw>%s)"
    r"|[ \t]+`(?P<bt>[^`\n]+)`"
    r"|(?:,[ \t]*|[ \t]*\(|[ \t]+)\"(?P<q>[^\"\n]*)(?P<qend>\"?)"
    r")?" % (SEC, SEC, SEC))
# A comment's or quote's lead on a continued line.
LEAD = re.compile(r"^[ \t]*(?:\*(?!/)|#+|//|>)?[ \t]*")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
LINK_ANCHOR = re.compile(r"\]\(#([\w\-]+)\)")


def norm(text):
    """A heading's or a quoted section's text, compared loosely."""
    text = text.replace("`", "").strip().strip("\"'").strip()
    return re.sub(r"\s+", " ", text).lower()


def slug(text):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


class Doc:
    """The headings of one Markdown document."""

    def __init__(self, text):
        self.names, self.secs, self.anchors = [], set(), set()
        fenced = False
        for line in text.splitlines():
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else HEADING.match(line)
            if not m:
                continue
            title = m.group(2)
            self.names.append(norm(title))
            s = re.match(r"§(%s)(?!\d)" % SEC, norm(title))
            if s:
                self.secs.add(s.group(1))
            a = base = slug(title)
            k = 1
            while a in self.anchors:
                a, k = "%s-%d" % (base, k), k + 1
            self.anchors.add(a)

    def has_name(self, name):
        name = norm(name)
        for h in self.names:
            if h == name:
                return True
            rest = h[len(name):] if h.startswith(name) else None
            if rest and (rest[0] in ":,(—" or rest.startswith((" (", " —",
                                                               " -", " –"))):
                return True
        return False


def expand(first, last):
    """The sections of §first or §first-last (§5-6, §2-3, §7.2-4)."""
    if not last:
        return [first]
    a, b = first.split("."), last.split(".")
    if len(b) < len(a):
        b = a[:len(a) - len(b)] + b
    if a[:-1] != b[:-1] or int(b[-1]) < int(a[-1]):
        return [first, last]
    head = ".".join(a[:-1])
    return [(head + "." if head else "") + str(i)
            for i in range(int(a[-1]), int(b[-1]) + 1)]


# Where a comment or a literal can begin: c_strings skips to the next one.
C_START = re.compile(r"""//|/\*|["']""")


def c_strings(text):
    """Offsets of C string literals, as a list of (start, end)."""
    spans, i, n = [], 0, len(text)
    while i < n:
        m = C_START.search(text, i)
        if not m:
            break
        i = m.start()
        ch = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if ch == '"':
                spans.append((i, j + 1))
            i = j + 1
    return spans


def py_strings(text):
    """Offsets of Python string literals (docstrings included)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING:
                spans.append((starts[tok.start[0] - 1] + tok.start[1],
                              starts[tok.end[0] - 1] + tok.end[1]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return spans


class Tree:
    """The repository's files, with in-memory files laid over them."""

    def __init__(self, root, overlay=None):
        self.root, self.overlay, self.docs = root, overlay or {}, {}

    def is_file(self, rel):
        if rel in self.overlay:
            return self.overlay[rel] is not None
        return os.path.isfile(os.path.join(self.root, rel))

    def read(self, rel):
        if rel in self.overlay:
            return self.overlay[rel]
        with open(os.path.join(self.root, rel), encoding="utf-8",
                  errors="replace") as f:
            return f.read()

    def doc(self, rel):
        if rel not in self.docs:
            self.docs[rel] = Doc(self.read(rel))
        return self.docs[rel]

    def files(self):
        try:
            out = subprocess.run(
                ["git", "-C", self.root, "ls-files", "-z", "--cached",
                 "--others", "--exclude-standard"],
                capture_output=True, check=True).stdout.decode()
            rels = [r for r in out.split("\0") if r]
        except (OSError, subprocess.CalledProcessError):
            rels = []
            for d, subs, names in os.walk(self.root):
                subs[:] = [s for s in subs if s not in SKIP_DIRS
                           and not s.startswith(("build", "."))]
                rels += [os.path.relpath(os.path.join(d, x), self.root)
                         for x in names]
        rels = {r for r in rels if self.is_file(r)} | set(
            r for r, t in self.overlay.items() if t is not None)
        return sorted(r for r in rels
                      if SCANNED.search(r) and r not in NOT_READ)


class Citation:
    def __init__(self, rel, line, start, name, in_string):
        self.rel, self.line, self.start = rel, line, start
        self.name, self.in_string = name, in_string
        self.path = None  # the document, as a path from the root
        self.bare = False  # a docs/ document by its bare name outside docs/
        self.sections, self.quoted, self.anchor = [], None, None
        self.problems = []

    def text(self):
        sec = (" §" + ", §".join(self.sections) if self.sections else
               ' "%s"' % self.quoted if self.quoted is not None else
               "#" + self.anchor if self.anchor else "")
        return self.name + sec


def resolve(tree, rel, name):
    """(path, bare) of the document name cited in file rel; path None when
    no file of the repository is that document."""
    here = posixpath.dirname(rel)
    cands = [name, posixpath.join(here, name)]
    if "/" not in name:
        cands.append("docs/" + name)
    for i, c in enumerate(cands):
        c = posixpath.normpath(c)
        if c.startswith("../") or c == ".." or os.path.isabs(c):
            continue
        if tree.is_file(c):
            return c, i == 2 and here != "docs"
    return None, False


def continued(lines, k):
    """Line k+1 (0-based k) without its comment lead, or ""."""
    if k + 1 >= len(lines):
        return ""
    return LEAD.sub("", lines[k + 1], count=1)


def scan(tree, rel):
    """Every citation of file rel, its bare § references and its links to
    its own headings (#anchor)."""
    text = tree.read(rel)
    strings = None  # its string literals, found at its first citation

    def in_string(off):
        nonlocal strings
        if strings is None:
            strings = c_strings(text) if C_LIKE.search(rel) else \
                py_strings(text) if rel.endswith(".py") else []
        return any(a <= off < b for a, b in strings)

    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    plain = [line.rstrip("\n") for line in lines]

    cites, covered, refs, anchors = [], [], [], []
    fenced, md = False, rel.endswith(".md")
    for k, line in enumerate(plain):
        if md and FENCE.match(line):
            fenced = not fenced
        # Most lines cite nothing: the literal each pattern needs first.
        for m in DOC.finditer(line) if ".md" in line else ():
            c = Citation(rel, k + 1, starts[k] + m.start(1), m.group(1),
                         in_string(starts[k] + m.start(1)))
            rest = line[m.end(1):]
            lead = len(rest.rstrip()) + 1  # where the next line starts
            nxt = ""
            if not rest.strip() or rest.strip() in ("'s", ","):
                nxt = continued(plain, k)
                if nxt.startswith(("§", '"')):
                    rest = rest.rstrip() + " " + nxt
                else:
                    nxt = ""
            t = TAIL.match(rest)
            used = t.end() if t else 0  # of rest, the citation's tail
            if t and t.group("anchor"):
                c.anchor = t.group("anchor")
            elif t and (t.group("sec") or t.group("secw")):
                c.sections = expand(t.group("sec") or t.group("secw"),
                                    t.group("sec_to"))
                # §a, §b and §c: every § of the clause is this document's
                # (the clause ends at a bracket, a sentence or the next
                # document).
                clause = re.split(r"[)\];]|\.\s|\.$", rest[t.end():])[0]
                nd = DOC.search(clause)
                clause = clause[:nd.start()] if nd else clause
                for s in SECTION.finditer(clause):
                    c.sections += expand(s.group(1), s.group(2))
                    used = t.end() + s.end()
            elif t and t.group("bt"):
                c.quoted = t.group("bt")
            elif t and t.group("q") is not None:
                q = t.group("q")
                if not t.group("qend"):
                    more = continued(plain, k)
                    q = q + " " + more.split('"', 1)[0] if '"' in more \
                        else None
                c.quoted = q.strip() if q else None
            cites.append(c)
            covered.append((k, m.start(1), m.end(1) + min(used, lead)))
            if nxt and used > lead:
                skip = len(plain[k + 1]) - len(nxt)
                covered.append((k + 1, 0, skip + used - lead))
        for s in SECTION.finditer(line) if "§" in line else ():
            if any(ck == k and a <= s.start() < b for ck, a, b in covered):
                continue
            refs.append((k + 1, expand(s.group(1), s.group(2)),
                         previous_doc(plain, k, s.start())))
        if md and not fenced and "](#" in line:
            for a in LINK_ANCHOR.finditer(line):
                anchors.append((k + 1, a.group(1)))
    return cites, refs, anchors


def previous_doc(lines, k, col):
    """The last document named before column col of line k (or on the line
    above), else the document numbered by §."""
    found = DOC.findall(lines[k][:col])
    if not found and k > 0:
        found = DOC.findall(lines[k - 1])
    return found[-1] if found else None


def judge(tree, c):
    path, bare = resolve(tree, c.rel, c.name)
    c.path, c.bare = path, bare
    what = c.text()
    if path is None:
        c.problems.append("%s: no such document in the repository" % what)
        return
    if bare and not c.in_string:
        c.problems.append("%s: bare name; the document is %s (--fix)"
                          % (what, path))
    d = tree.doc(path)
    for s in c.sections:
        if s not in d.secs:
            c.problems.append("%s: no heading §%s in %s" % (what, s, path))
    if c.quoted is not None and not d.has_name(c.quoted):
        c.problems.append("%s: no such heading in %s" % (what, path))
    if c.anchor and c.anchor not in d.anchors:
        c.problems.append("%s: no heading with that anchor in %s"
                          % (what, path))


def judge_ref(tree, rel, secs, docname):
    """A § with no document right before it."""
    path = NUMBERED
    if docname:
        p, _ = resolve(tree, rel, docname)
        path = p or path
    if not tree.is_file(path):
        return ["§%s: no document numbered by § (%s) in the repository"
                % (secs[0], path)]
    d = tree.doc(path)
    return ["§%s: no heading §%s in %s" % (s, s, path)
            for s in secs if s not in d.secs]


def check(tree, rels=None):
    """(problems, citations) over the tree: problems as 'FILE:LINE: ...'."""
    problems, cites = [], []
    for rel in rels or tree.files():
        cs, refs, anchors = scan(tree, rel)
        for c in cs:
            judge(tree, c)
            problems += ["%s:%d: %s" % (rel, c.line, p) for p in c.problems]
        for line, secs, docname in refs:
            problems += ["%s:%d: %s" % (rel, line, p)
                         for p in judge_ref(tree, rel, secs, docname)]
        for line, a in anchors:
            if a not in tree.doc(rel).anchors:
                problems.append("%s:%d: #%s: no heading with that anchor "
                                "in %s" % (rel, line, a, rel))
        cites += cs
    return problems, cites


def fixes(cites):
    """The bare citations --fix rewrites: outside string literals."""
    return [c for c in cites if c.bare and not c.in_string]


def apply_fixes(tree, cites, write=True):
    """Rewrites the bare names; returns ({rel: new text}, long lines)."""
    by_file, out, long_lines = {}, {}, []
    for c in fixes(cites):
        by_file.setdefault(c.rel, []).append(c)
    for rel, cs in sorted(by_file.items()):
        text = tree.read(rel)
        old_lines = text.splitlines()
        for c in sorted(cs, key=lambda c: -c.start):
            assert text[c.start:c.start + len(c.name)] == c.name
            text = text[:c.start] + c.path + text[c.start + len(c.name):]
        for i, (a, b) in enumerate(zip(old_lines, text.splitlines())):
            if len(b) > COLUMNS >= len(a):
                long_lines.append("%s:%d: %d columns" % (rel, i + 1, len(b)))
        out[rel] = text
        if write:
            with open(os.path.join(tree.root, rel), "w",
                      encoding="utf-8") as f:
                f.write(text)
    return out, long_lines


PLANTED_DOC = """# Planted

## §1 One

### §1.2 One, two

## Fault spec

## `run`

## Worlds of thousands of ranks (issue 23)

```
## §9 not a heading: inside a fence
```
"""

PLANTED_C = """/* behavior.md §1 and behavior.md §1.2 */
/* gone.md: a missing document */
/* docs/behavior.md §3: a missing section */
/* docs/cli.md "No such section" */
static const char *s = "see behavior.md section 1.2";
static const char *t = "see behavior.md §7";
/* docs/cli.md `run`, docs/cli.md "Fault spec" (docs/cli.md's) */
/* docs/performance.md, "Worlds of thousands of
 * ranks" */
/* (docs/behavior.md
 * §1) and §1.2, §9 */
/* docs/behavior.md §1-2 */
/* [x](docs/cli.md#run) [y](docs/cli.md#walk) ../shared/spec/cli.md */
"""

PLANTED_MD = """# Planted notes

[up](#planted-notes), [gone](#no-such-heading); docs/behavior.md §1.2
"""

# (line, what the problem says), every one of them and nothing else.
PLANTED_WANT = [
    (1, "behavior.md §1: bare name"),
    (1, "behavior.md §1.2: bare name"),
    (2, "gone.md: no such document"),
    (3, "§3: no heading §3"),
    (4, '"No such section": no such heading'),
    (6, "§7: no heading §7"),
    (11, "§9: no heading §9"),
    (12, "§2: no heading §2"),
    (13, "cli.md#walk: no heading with that anchor"),
    (13, "../shared/spec/cli.md: no such document"),
]
PLANTED_MD_WANT = [(3, "#no-such-heading: no heading")]


def self_test(root):
    """Plants citations in memory; each broken one must be caught."""
    failed = []
    overlay = {"docs/behavior.md": PLANTED_DOC, "docs/cli.md": PLANTED_DOC,
               "docs/performance.md": PLANTED_DOC, "core/planted.c": PLANTED_C,
               "tests/planted.md": PLANTED_MD}
    tree = Tree(root, overlay)
    problems, cites = check(tree, ["core/planted.c", "tests/planted.md"])
    got = [(p.split(":")[0], int(p.split(":")[1]), p) for p in problems]
    want = [("core/planted.c", line, what) for line, what in PLANTED_WANT]
    want += [("tests/planted.md", line, what)
             for line, what in PLANTED_MD_WANT]
    for rel, line, what in want:
        hit = [g for g in got if g[:2] == (rel, line) and what in g[2]]
        if not hit:
            failed.append("not caught: %s:%d: %s" % (rel, line, what))
        else:
            got.remove(hit[0])
    failed += ["caught wrongly: %s" % p for _, _, p in got]
    new, _ = apply_fixes(tree, cites, write=False)
    fixed = new.get("core/planted.c", "").splitlines()
    if not fixed or fixed[0] != ("/* docs/behavior.md §1 and "
                                 "docs/behavior.md §1.2 */"):
        failed.append("--fix did not rewrite line 1: %r" % fixed[:1])
    if fixed and fixed[4:6] != PLANTED_C.splitlines()[4:6]:
        failed.append("--fix touched a string literal: %r" % fixed[4:6])
    # The real tree's documents, with a missing one and a missing section
    # of one planted in memory.
    real = Tree(root, {"core/planted_real.c":
                       "/* docs/no-such-document.md */\n"
                       "/* docs/behavior.md §99 */\n"})
    problems, _ = check(real, ["core/planted_real.c"])
    for line, what in [(1, "no such document"), (2, "§99")]:
        if not any(p.startswith("core/planted_real.c:%d:" % line)
                   and what in p for p in problems):
            failed.append("not caught in the real tree: line %d: %s"
                          % (line, what))
    for f in failed:
        print("self-test: " + f)
    print("self-test: %s" % ("FAILED" if failed else
                             "every planted citation caught"))
    return 1 if failed else 0


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-") or len(argv) > 3 or (
            len(argv) == 3 and argv[2] not in ("--self-test", "--fix",
                                               "--list")):
        print(__doc__.rsplit("\n", 1)[-1], file=sys.stderr)
        return 2
    root, mode = argv[1], argv[2] if len(argv) == 3 else None
    if mode == "--self-test":
        return self_test(root)
    tree = Tree(root)
    problems, cites = check(tree)
    if mode == "--list":
        for c in cites:
            print("%s:%d: %s%s" % (c.rel, c.line, c.text(),
                                   " (string)" if c.in_string else ""))
    if mode == "--fix":
        todo = fixes(cites)
        _, long_lines = apply_fixes(tree, cites)
        print("rewrote %d bare citations in %d files"
              % (len(todo), len({c.rel for c in todo})))
        for line in long_lines:
            print("longer than %d columns now: %s" % (COLUMNS, line))
        tree.docs.clear()
        problems, cites = check(tree)
    for p in problems:
        print(p)
    nfix = len(fixes(cites))
    print("citations: %d in %d files, %d problems (%d bare names --fix "
          "rewrites)" % (len(cites), len({c.rel for c in cites}),
                         len(problems), nfix), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""``make impact TO=<release>``: what moving the pin does to the book, symbol by symbol.

Both trees are indexed (the pinned one in ``vllm/``, the candidate unpacked
by :mod:`.trees`); every source target the book cites (``{src}`` roles and
``src-code`` excerpts, found by :mod:`.mdscan`) is resolved in the old tree
and looked up in the new one:

``unchanged``
    same path, same qualname, the same text at the same lines.
``changed``
    same path and qualname, different text (a capped unified diff is shown,
    with the file's real line numbers).
``moved``
    same text (up to the symbol's own name and indentation) at other lines
    or in another file, or the same qualname found in another file (then the
    body may have changed too: ``body_changed``).
``removed``
    nothing found; the nearest candidates (``SourceIndex.suggest``) are listed.

Files and directories are compared by content hash.  Separately from the
classification, every anchor *as written* is re-resolved in the new tree
(a quoted-line anchor may break although its symbol merely changed).

The report also lists, per curriculum chapter, the changed files inside its
``source_areas`` globs (globs outside the indexed directories, such as
``requirements/**``, are matched against both unpacked trees), and the
changed indexed files that no chapter covers (the source-map chapter, whose
globs take ``vllm/**`` and ``csrc/**`` whole, does not count).  Markdown and JSON are
written side by side (``docs/impact-<from>-to-<to>.md/.json``); the output is
deterministic (no timestamps), so re-running it on the same trees gives the
same files.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
import textwrap
import time
from collections import defaultdict
from pathlib import Path

from .. import curriculum as cur_mod
from .. import pin as pin_mod
from ..anchors.resolve import AnchorError, Target, parse_target, resolve
from ..index import preferred
from . import mdscan, trees
from .common import SOURCE_DIR, build_tree_index, chapter_pattern, index_cache, log, rel

#: a diff is kept for symbols/files up to this many lines (bigger ones: the diffstat only) …
MAX_DIFF_SPAN = 120
#: … and cut to this many lines (the same in the Markdown and the JSON)
MAX_DIFF_LINES = 16
MAX_FILES_LISTED = 40
STATUSES = ("unchanged", "changed", "moved", "removed", "unresolved")
CATCH_ALL = re.compile(r"^[^*?/]+/\*\*$")


class ImpactError(RuntimeError):
    pass


# ---------------------------------------------------------------------------- data


@dataclasses.dataclass
class Use:
    file: str
    line: int
    docname: str
    anchor: str  # as written


@dataclasses.dataclass
class AnchorCheck:
    anchor: str
    resolves: bool
    location: str = ""  # path:start-end in the new tree
    error: str = ""
    suggestions: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Cited:
    subject: str  # path::Qual.name[#N] | path | path/
    kind: str  # symbol | file | dir
    status: str
    old: str = ""  # location in the old tree (path:start-end)
    new: str = ""  # location in the new tree
    detail: str = ""
    body_changed: bool = False
    diff: list[str] = dataclasses.field(default_factory=list)
    diff_truncated: int = 0
    suggestions: list[str] = dataclasses.field(default_factory=list)
    anchors: list[AnchorCheck] = dataclasses.field(default_factory=list)
    uses: list[Use] = dataclasses.field(default_factory=list)

    @property
    def breaks(self) -> bool:
        return any(not a.resolves for a in self.anchors)


@dataclasses.dataclass
class ChapterArea:
    path: str
    title: str
    status: str
    source_areas: list[str]
    added: list[str]
    removed: list[str]
    modified: list[str]

    @property
    def n_changed(self) -> int:
        return len(self.added) + len(self.removed) + len(self.modified)


@dataclasses.dataclass
class Report:
    from_version: str
    from_commit: str
    from_sha256: str
    to_version: str
    to_commit: str  # abbreviated (the sdist's _version.py)
    to_sha256: str
    to_url: str
    cited: list[Cited]
    pages: dict[str, dict]  # docname → {file, chapter, title, reasons: [...]}
    areas: list[ChapterArea]
    files: dict[str, list[str]]  # added / removed / modified / renamed ("old -> new")
    uncovered: list[str]
    seconds: float = 0.0
    md_path: Path | None = None
    json_path: Path | None = None

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for c in self.cited:
            out[c.status] += 1
        return out

    def summary_line(self) -> str:
        c = self.counts()
        broken = sum(1 for x in self.cited for a in x.anchors if not a.resolves)
        where = f" → {self.md_path} (+ .json)" if self.md_path else ""
        return (f"impact v{self.from_version} → v{self.to_version}: {len(self.cited)} cited targets "
                f"(unchanged {c['unchanged']}, changed {c['changed']}, moved {c['moved']}, removed {c['removed']}"
                f"{', unresolved ' + str(c['unresolved']) if c['unresolved'] else ''}); {broken} anchors would break; "
                f"{sum(1 for p in self.pages.values() if p['reasons'])} pages affected; "
                f"{sum(len(v) for k, v in self.files.items() if k != 'renamed')} files changed; {self.seconds:.1f}s{where}")


# ---------------------------------------------------------------------------- helpers


def glob_regex(pattern: str) -> re.Pattern[str]:
    """``source_areas`` globs: ``**`` any depth, ``*``/``?`` within one path segment."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    pat = "".join(out)
    if pattern.endswith("/"):
        pat += ".*"
    return re.compile(pat + r"\Z")


class _Lines:
    """File lines of one index, read once."""

    def __init__(self, index) -> None:
        self.index = index
        self.cache: dict[str, list[str]] = {}

    def get(self, path: str) -> list[str]:
        if path not in self.cache:
            self.cache[path] = self.index.lines(path)
        return self.cache[path]

    def span(self, path: str, start: int, end: int) -> list[str]:
        return self.get(path)[start - 1 : end]


def _normalised(lines: list[str], name: str) -> str:
    text = textwrap.dedent("\n".join(line.rstrip() for line in lines))
    if name:
        text = re.sub(rf"\b{re.escape(name)}\b", "\u00a7", text)
    return hashlib.sha256(text.encode()).hexdigest()


#: a one-line body (a field, a constant) is not evidence of a rename: ``max_num_partial_prefills: int =
#: Field(default=1, ge=1)`` and ``max_loras: int = Field(default=1, ge=1)`` are the same text once the names are
#: taken out, with unrelated meanings (the 0.26.0 → 0.33.0 report said one became the other)
RENAME_MIN_LINES = 2


def _distinctive(lines: list[str]) -> bool:
    """Whether equal text under another name may be reported as the same symbol renamed."""
    return sum(1 for line in lines if line.strip()) >= RENAME_MIN_LINES


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _loc(path: str, start: int, end: int) -> str:
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


def _diff(old: list[str], new: list[str], old_start: int, new_start: int, old_name: str, new_name: str) -> tuple[list[str], int]:
    """A unified diff with the files' own line numbers, cut to MAX_DIFF_LINES (returns lines, lines cut)."""
    if max(len(old), len(new)) > MAX_DIFF_SPAN:
        return [], 0
    raw = list(difflib.unified_diff(old, new, fromfile=old_name, tofile=new_name, lineterm="", n=2))
    out = []
    for line in raw:
        m = re.match(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@(.*)$", line)
        if m:
            a = int(m.group(1)) + old_start - 1
            b = int(m.group(3)) + new_start - 1
            line = f"@@ -{a}{m.group(2) or ''} +{b}{m.group(4) or ''} @@{m.group(5)}"
        out.append(line)
    if len(out) > MAX_DIFF_LINES:
        return out[:MAX_DIFF_LINES], len(out) - MAX_DIFF_LINES
    return out, 0


def _diffstat(old: list[str], new: list[str]) -> str:
    if max(len(old), len(new)) > MAX_DIFF_SPAN:  # big bodies: multiset difference (ignores moved lines), O(n)
        from collections import Counter

        o, n = Counter(old), Counter(new)
        return f"+{sum((n - o).values())} −{sum((o - n).values())}"
    add = rem = 0
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            rem += a2 - a1
        if op in ("replace", "insert"):
            add += b2 - b1
    return f"+{add} −{rem}"


# ---------------------------------------------------------------------------- classification


class Quiet:
    """An index whose did-you-mean is empty: ``resolve`` then only says *why* (did-you-mean costs ~0.3 s a call
    on the whole tree; the classifier finds moved symbols itself and asks once per subject)."""

    def __init__(self, index) -> None:
        self._index = index

    def __getattr__(self, name: str):
        return getattr(self._index, name)

    def suggest(self, *a, **kw) -> list[str]:
        return []

    def suggest_paths(self, *a, **kw) -> list[str]:
        return []


class Classifier:
    def __init__(self, old, new, from_version: str, to_version: str) -> None:
        self.old, self.new = old, new
        self.quiet_new = Quiet(new)
        self.old_lines, self.new_lines = _Lines(old), _Lines(new)
        self.fv, self.tv = from_version, to_version
        self._by_qual: dict[str, list] | None = None
        self._by_len: dict[tuple[str, int], list] | None = None

    # indexes of the new tree, built on first use
    def by_qual(self) -> dict[str, list]:
        if self._by_qual is None:
            d: dict[str, list] = defaultdict(list)
            for s in self.new.all_symbols():
                d[s.qualname].append(s)
                if "." in s.qualname and self.new.files[s.path].lang == "cpp":
                    d[s.name].append(s)
            self._by_qual = d
        return self._by_qual

    def by_len(self) -> dict[tuple[str, int], list]:
        if self._by_len is None:
            d: dict[tuple[str, int], list] = defaultdict(list)
            for s in self.new.all_symbols():
                d[(s.kind, s.end - s.start)].append(s)
            self._by_len = d
        return self._by_len

    def subject(self, t: Target) -> Target:
        """What is classified: the symbol (or file) an anchor points into."""
        return Target(t.path, t.is_dir, t.qualname, t.ordinal, None)

    def classify(self, t: Target) -> Cited:
        subj = self.subject(t)
        if t.is_dir:
            return self._dir(subj)
        if not subj.qualname:
            return self._file(subj)
        return self._symbol(subj)

    def _symbol(self, t: Target) -> Cited:
        c = Cited(str(t), "symbol", "unchanged")
        try:
            r_old = resolve(self.old, t)
        except AnchorError as exc:
            c.status, c.detail = "unresolved", f"does not resolve in v{self.fv}: {exc.message}"
            return c
        sym = r_old.symbol
        assert sym is not None
        c.old = _loc(t.path, r_old.start, r_old.end)
        old_body = self.old_lines.span(t.path, r_old.start, r_old.end)
        # 1. same path, same qualname
        try:
            r_new = resolve(self.quiet_new, t)
        except AnchorError as exc:
            r_new = None
            in_file = self.new.lookup(t.path, t.qualname) if t.path in self.new.files else []
            if in_file and "ambiguous" in exc.message:
                c.status, c.detail = "changed", f"now ambiguous in v{self.tv}: {exc.message}"
                c.suggestions = exc.suggestions
                return c
        if r_new is not None:
            c.new = _loc(t.path, r_new.start, r_new.end)
            new_body = self.new_lines.span(t.path, r_new.start, r_new.end)
            if new_body == old_body:
                if (r_new.start, r_new.end) == (r_old.start, r_old.end):
                    c.status = "unchanged"
                else:
                    c.status, c.detail = "moved", f"same text, lines {r_old.start}-{r_old.end} → {r_new.start}-{r_new.end}"
                return c
            c.status, c.body_changed = "changed", True
            c.detail = f"body changed ({_diffstat(old_body, new_body)} lines)"
            if (r_new.start, r_new.end) != (r_old.start, r_old.end):
                c.detail += f", lines {r_old.start}-{r_old.end} → {r_new.start}-{r_new.end}"
            c.diff, c.diff_truncated = _diff(old_body, new_body, r_old.start, r_new.start,
                                             f"v{self.fv}/{t.path}", f"v{self.tv}/{t.path}")
            return c
        # 2. the same qualname elsewhere, 3. the same text under another name/place
        key = _normalised(old_body, sym.name)
        cands = [s for s in self.by_qual().get(t.qualname, []) if not (s.path == t.path and s.qualname == t.qualname)]
        best = None
        for s in sorted(cands, key=lambda s: (s.path, s.ordinal)):
            body = self.new_lines.span(s.path, s.start, s.end)
            if _normalised(body, s.name) == key:
                best, same = s, True
                break
        else:
            same = False
            if cands:
                scored = []
                for s in cands:
                    body = self.new_lines.span(s.path, s.start, s.end)
                    scored.append((difflib.SequenceMatcher(None, old_body, body, autojunk=False).ratio(), s.path, s))
                scored.sort(key=lambda x: (-x[0], x[1]))
                best = scored[0][2]
        if best is None and _distinctive(old_body):
            for s in sorted(self.by_len().get((sym.kind, sym.end - sym.start), []), key=lambda s: (s.path, s.qualname)):
                body = self.new_lines.span(s.path, s.start, s.end)
                if _normalised(body, s.name) == key:
                    best, same = s, True
                    break
        if best is not None:
            choice = preferred(self.new.lookup(best.path, best.qualname)) or None
            start, end = (choice.start, choice.end) if choice else (best.start, best.end)
            new_body = self.new_lines.span(best.path, start, end)
            c.status = "moved"
            c.new = _loc(best.path, start, end)
            where = f"{best.path}::{best.qualname}" if best.qualname != t.qualname else best.path
            renamed = " (renamed)" if best.name != sym.name else ""
            c.detail = f"now {where}{renamed}"
            c.suggestions = [f"{best.path}::{best.qualname}"]
            if not same:  # same = equal up to the symbol's own name and indentation
                c.body_changed = True
                c.detail += f"; body changed ({_diffstat(old_body, new_body)} lines)"
                c.diff, c.diff_truncated = _diff(old_body, new_body, r_old.start, start,
                                                 f"v{self.fv}/{t.path}", f"v{self.tv}/{best.path}")
            others = sorted({f"{s.path}::{s.qualname}" for s in cands} - set(c.suggestions))
            c.suggestions += others[:4]
            return c
        c.status = "removed"
        c.detail = f"no {t.qualname} in v{self.tv}" + ("" if t.path in self.new.files else f" (and no file {t.path})")
        c.suggestions = self.new.suggest(t.path if t.path in self.new.files else None, t.qualname)
        return c

    def _file(self, t: Target) -> Cited:
        c = Cited(str(t), "file", "unchanged")
        f_old = self.old.files.get(t.path)
        if f_old is None:
            c.status, c.detail = "unresolved", f"no file {t.path} in v{self.fv}"
            return c
        c.old = _loc(t.path, 1, max(f_old.n_lines, 1))
        f_new = self.new.files.get(t.path)
        if f_new is not None:
            c.new = _loc(t.path, 1, max(f_new.n_lines, 1))
            if f_new.sha256 == f_old.sha256:
                return c
            old, new = self.old_lines.get(t.path), self.new_lines.get(t.path)
            c.status, c.body_changed = "changed", True
            c.detail = f"file changed ({_diffstat(old, new)} lines; {f_old.n_lines} → {f_new.n_lines} lines)"
            c.diff, c.diff_truncated = _diff(old, new, 1, 1, f"v{self.fv}/{t.path}", f"v{self.tv}/{t.path}")
            return c
        same = sorted(p for p, f in self.new.files.items() if f.sha256 == f_old.sha256)
        if same:
            c.status, c.new, c.detail = "moved", same[0], f"same content now at {same[0]}"
            c.suggestions = same[:5]
            return c
        base = t.path.rsplit("/", 1)[-1]
        old = self.old_lines.get(t.path)
        scored = []
        for p in self.new.files:
            if p.rsplit("/", 1)[-1] == base:
                r = difflib.SequenceMatcher(None, old, self.new_lines.get(p), autojunk=False).ratio()
                if r >= 0.5:
                    scored.append((-r, p))
        if scored:
            scored.sort()
            p = scored[0][1]
            new = self.new_lines.get(p)
            c.status, c.new, c.body_changed = "moved", p, True
            c.detail = f"now {p} ({-scored[0][0]:.0%} similar; {_diffstat(old, new)} lines)"
            c.diff, c.diff_truncated = _diff(old, new, 1, 1, f"v{self.fv}/{t.path}", f"v{self.tv}/{p}")
            c.suggestions = [s for _r, s in scored[:5]]
            return c
        c.status, c.detail = "removed", f"no file {t.path} in v{self.tv}"
        c.suggestions = self.new.suggest_paths(t.path)
        return c

    def _dir(self, t: Target) -> Cited:
        c = Cited(str(t), "dir", "unchanged")
        prefix = t.path.rstrip("/") + "/"
        old = {p: f.sha256 for p, f in self.old.files.items() if p.startswith(prefix)}
        if not old:
            c.status, c.detail = "unresolved", f"no directory {prefix} in v{self.fv}"
            return c
        c.old = prefix
        new = {p: f.sha256 for p, f in self.new.files.items() if p.startswith(prefix)}
        if not new:
            c.status, c.detail = "removed", f"no directory {prefix} in v{self.tv}"
            c.suggestions = self.new.suggest_paths(prefix)
            return c
        c.new = prefix
        added = len(set(new) - set(old))
        removed = len(set(old) - set(new))
        modified = sum(1 for p in set(old) & set(new) if old[p] != new[p])
        if added or removed or modified:
            c.status = "changed"
            c.detail = f"{plural(added, 'file')} added, {removed} removed, {modified} modified (of {len(old)})"
        return c

    def check_anchor(self, anchor: str, cited: Cited | None = None) -> AnchorCheck:
        """Re-resolve *anchor* as written in the new tree; candidates come from its subject's classification."""
        try:
            r = resolve(self.quiet_new, anchor)
        except AnchorError as exc:
            sug = list(exc.suggestions)  # ambiguity lists its #N forms itself
            if cited is not None:
                sug = list(dict.fromkeys([*sug, *cited.suggestions]))
            return AnchorCheck(anchor, False, "", exc.message, sug[:5])
        loc = r.location
        return AnchorCheck(anchor, True, loc)


# ---------------------------------------------------------------------------- the whole report


def collect_uses(root: Path) -> tuple[dict[str, list[Use]], list[mdscan.Page]]:
    source = root / SOURCE_DIR
    pattern = chapter_pattern()
    pages = mdscan.scan_book(source, lambda dn: bool(pattern.search(dn)))
    uses: dict[str, list[Use]] = defaultdict(list)
    for page in pages:
        for a in page.anchors:
            uses[a.target.strip()].append(Use(rel(root, page.path), a.line, page.docname, a.target.strip()))
    return uses, pages


def _is_map(globs, dirs: set[str]) -> bool:
    """A chapter whose globs cover every indexed directory whole (``vllm/**`` + ``csrc/**``)."""
    whole = {g[:-3] for g in globs if CATCH_ALL.match(g)}
    return "**" in globs or (bool(dirs) and dirs <= whole)


def _hash_matching(tree: Path, globs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for g in globs:
        rx = glob_regex(g)
        literal = re.split(r"[*?\[]", g, maxsplit=1)[0]
        base = tree / literal
        if base.is_file():
            cands = [base]
        else:
            base = base if base.is_dir() else (tree / literal).parent
            cands = [p for p in base.rglob("*") if p.is_file()] if base.is_dir() and base != tree.parent else []
        for p in cands:
            rel_path = p.relative_to(tree).as_posix()
            if rel_path not in out and rx.match(rel_path):
                out[rel_path] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _extra_changes(old_root: Path, new_root: Path, globs: list[str]) -> dict[str, list[str]]:
    if not globs:
        return {"added": [], "removed": [], "modified": []}
    o, n = _hash_matching(Path(old_root), globs), _hash_matching(Path(new_root), globs)
    return {"added": sorted(set(n) - set(o)), "removed": sorted(set(o) - set(n)),
            "modified": sorted(p for p in set(o) & set(n) if o[p] != n[p])}


def file_changes(old, new) -> dict[str, list[str]]:
    o = {p: f.sha256 for p, f in old.files.items()}
    n = {p: f.sha256 for p, f in new.files.items()}
    added = sorted(set(n) - set(o))
    removed = sorted(set(o) - set(n))
    modified = sorted(p for p in set(o) & set(n) if o[p] != n[p])
    by_sha: dict[str, list[str]] = defaultdict(list)
    for p in added:
        by_sha[n[p]].append(p)
    renamed = []
    for p in removed:
        if by_sha.get(o[p]):
            renamed.append(f"{p} -> {by_sha[o[p]][0]}")
    return {"added": added, "removed": removed, "modified": modified, "renamed": sorted(renamed)}


def compare(root: Path, old, new, *, from_version: str, to_version: str, cur: cur_mod.Curriculum | None = None) -> tuple[
        list[Cited], dict[str, dict], list[ChapterArea], dict[str, list[str]], list[str]]:
    """Classify the book's citations and source areas between two indexes."""
    uses, pages = collect_uses(root)
    if cur is None:
        cur = cur_mod.load(root / "curriculum.toml")
    clf = Classifier(old, new, from_version, to_version)
    by_subject: dict[str, Cited] = {}
    for anchor in sorted(uses):
        try:
            t = parse_target(anchor)
        except AnchorError as exc:
            c = Cited(anchor, "symbol", "unresolved", detail=f"malformed anchor: {exc.message}")
            c.uses = uses[anchor]
            by_subject.setdefault(anchor, c)
            continue
        subj = str(clf.subject(t))
        c = by_subject.get(subj)
        if c is None:
            c = by_subject[subj] = clf.classify(t)
        c.anchors.append(clf.check_anchor(anchor, c))
        c.uses.extend(uses[anchor])
    cited = sorted(by_subject.values(), key=lambda c: (STATUSES.index(c.status), c.subject))
    for c in cited:
        c.uses.sort(key=lambda u: (u.file, u.line))
    # pages affected
    page_info: dict[str, dict] = {}
    for page in pages:
        ch = cur.chapter(page.docname)
        page_info[page.docname] = {"file": rel(root, page.path), "chapter": bool(ch), "title": ch.title if ch else (page.h1[0] if page.h1 else page.docname),
                                   "reasons": []}
    for c in cited:
        if c.status == "unchanged" and not c.breaks:
            continue
        for dn in sorted({u.docname for u in c.uses}):
            what = c.status + (" + anchor breaks" if c.breaks else "")
            page_info[dn]["reasons"].append(f"cites {c.subject} ({what})")
    files = file_changes(old, new)
    changed = sorted(set(files["added"]) | set(files["removed"]) | set(files["modified"]))
    # source_areas outside the indexed directories (requirements/**, setup.py…): hash those files directly
    dirs = {p.split("/", 1)[0] for p in list(old.files) + list(new.files)}
    extra_globs = sorted({g for ch in cur.chapters() for g in ch.source_areas if g.split("/", 1)[0] not in dirs})
    extra = _extra_changes(old.root, new.root, extra_globs)
    added = set(files["added"]) | set(extra["added"])
    removed = set(files["removed"]) | set(extra["removed"])
    modified = set(files["modified"]) | set(extra["modified"])
    all_changed = sorted(added | removed | modified)
    areas = []
    covered: set[str] = set()
    for ch in cur.chapters():
        regs = [glob_regex(g) for g in ch.source_areas]
        hit = [p for p in all_changed if any(r.match(p) for r in regs)]
        if not _is_map(ch.source_areas, dirs):  # the source-map chapter covers everything, specifically nothing
            covered.update(hit)
        a = ChapterArea(ch.path, ch.title, ch.status, list(ch.source_areas),
                        [p for p in hit if p in added], [p for p in hit if p in removed], [p for p in hit if p in modified])
        areas.append(a)
        if ch.written and a.n_changed and ch.path in page_info:
            page_info[ch.path]["reasons"].append(
                f"{plural(a.n_changed, 'file')} changed in its source_areas (+{len(a.added)} −{len(a.removed)} ~{len(a.modified)})")
    uncovered = [p for p in changed if p not in covered]
    return cited, page_info, areas, files, uncovered


def run(root: Path, to: str, *, out: Path | None = None, jobs: int = 0) -> Report:
    t0 = time.perf_counter()
    root = Path(root).resolve()
    pin = pin_mod.load_pin(root)
    old_tree = pin_mod.source_root(root)
    cand = trees.release_tree(to, pin.index)
    log(f"indexing v{pin.version} ({old_tree})")
    old = build_tree_index(old_tree, index_cache(root))
    log(f"indexing v{cand.version} ({cand.path})")
    new = build_tree_index(cand.path, pin_mod.cache_dir() / "index")
    cited, pages, areas, files, uncovered = compare(root, old, new, from_version=pin.version, to_version=cand.version)
    rep = Report(pin.version, pin.commit, pin.sdist_sha256, cand.version, cand.commit_abbrev, cand.sdist_sha256,
                 cand.sdist_url, cited, pages, areas, files, uncovered)
    rep.seconds = time.perf_counter() - t0
    md = out or root / "docs" / f"impact-{pin.version}-to-{cand.version}.md"
    write(rep, md)
    return rep


def write(rep: Report, md: Path) -> None:
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(render_markdown(rep), encoding="utf-8")
    js = md.with_suffix(".json")
    js.write_text(_dump_lines(to_json(rep)), encoding="utf-8")
    rep.md_path, rep.json_path = md, js


def _dump_lines(data: dict) -> str:
    """JSON with one list element per line: compact, yet diffable line by line in git."""
    def enc(v) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))

    def block(v, indent: str) -> str:
        if isinstance(v, list) and v:
            return "[\n" + ",\n".join(indent + " " + enc(x) for x in v) + "\n" + indent + "]"
        if isinstance(v, dict) and v and all(isinstance(x, list) for x in v.values()):
            return "{\n" + ",\n".join(f"{indent} {enc(k)}: {block(x, indent + ' ')}" for k, x in v.items()) + "\n" + indent + "}"
        return enc(v)

    return "{\n" + ",\n".join(f"{enc(k)}: {block(v, '')}" for k, v in data.items()) + "\n}\n"


def to_json(rep: Report) -> dict:
    return {
        "from": {"version": rep.from_version, "commit": rep.from_commit, "sdist_sha256": rep.from_sha256},
        "to": {"version": rep.to_version, "commit_abbrev": rep.to_commit, "sdist_sha256": rep.to_sha256, "sdist_url": rep.to_url},
        "counts": rep.counts(),
        "cited": [{**{k: v for k, v in dataclasses.asdict(c).items() if k not in ("uses", "anchors")},
                   "anchors": [{"anchor": a.anchor, "resolves": True} if a.resolves else dataclasses.asdict(a)
                               for a in c.anchors],
                   "uses": [f"{u.file}:{u.line}" for u in c.uses]} for c in rep.cited],
        "pages": rep.pages,
        # file lists only for written chapters (a whole-tree glob would repeat every changed file)
        "source_areas": [
            {"path": a.path, "title": a.title, "status": a.status, "source_areas": a.source_areas,
             "n_added": len(a.added), "n_removed": len(a.removed), "n_modified": len(a.modified),
             **({"added": a.added, "removed": a.removed, "modified": a.modified} if a.status == "written" else {})}
            for a in rep.areas
        ],
        # files of the pinned tree that changed or vanished (the source browser marks their pages); added files
        # are not in the pinned tree, so counted only
        "files": {"n_added": len(rep.files["added"]), "n_removed": len(rep.files["removed"]),
                  "n_modified": len(rep.files["modified"]), "renamed": rep.files["renamed"],
                  "modified": rep.files["modified"], "removed": rep.files["removed"]},
        "uncovered": rep.uncovered,
    }


def _span(c: Cited) -> int:
    """Lines of the cited symbol/file in the old tree (0 for a directory)."""
    m = re.search(r":(\d+)(?:-(\d+))?$", c.old)
    if not m:
        return 0
    return int(m.group(2) or m.group(1)) - int(m.group(1)) + 1


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def _by_dir(paths: list[str], depth: int) -> list[tuple[str, int]]:
    d: dict[str, int] = defaultdict(int)
    for p in paths:
        parts = p.split("/")
        d["/".join(parts[: min(depth, len(parts) - 1)]) + "/"] += 1
    return sorted(d.items(), key=lambda x: (-x[1], x[0]))


def render_markdown(rep: Report) -> str:
    c = rep.counts()
    L: list[str] = []
    a = L.append
    a(f"# Impact report: vLLM v{rep.from_version} → v{rep.to_version}")
    a("")
    a(f"Generated by `make impact TO={rep.to_version}` (`python -m vllm_book.sync impact --to {rep.to_version}`); "
      "see `docs/source-sync.md`. Every source target the book cites is looked up in both trees; the JSON beside "
      "this file holds the same data.")
    a("")
    a("| | pinned (from) | candidate (to) |")
    a("|---|---|---|")
    a(f"| version | v{rep.from_version} | v{rep.to_version} |")
    a(f"| commit | `{rep.from_commit}` | `{rep.to_commit}` (abbreviated, from the sdist's `vllm/_version.py`) |")
    a(f"| sdist sha256 | `{rep.from_sha256}` | `{rep.to_sha256}` (PyPI index) |")
    a("")
    a("## Summary")
    a("")
    broken = [(x, an) for x in rep.cited for an in x.anchors if not an.resolves]
    a(f"- **{len(rep.cited)} cited source targets**: {c['unchanged']} unchanged, {c['changed']} changed, "
      f"{c['moved']} moved, {c['removed']} removed" + (f", {c['unresolved']} already unresolved at v{rep.from_version}" if c["unresolved"] else "") + ".")
    a(f"- **{len(broken)} anchors would break** (no longer resolve as written) if the pin moved now.")
    affected = {dn: p for dn, p in rep.pages.items() if p["reasons"]}
    a(f"- **{len(affected)} pages affected**: " + (", ".join(f"`{p['file']}`" for p in affected.values()) or "none") + ".")
    f = rep.files
    a(f"- **Files** (indexed under the browsable directories): {len(f['added'])} added, {len(f['removed'])} removed, "
      f"{len(f['modified'])} modified ({len(f['renamed'])} of the removals are pure renames); "
      f"{len(rep.uncovered)} changed files lie outside every chapter's specific `source_areas`.")
    a("")
    a("## Cited symbols")
    a("")
    a("| status | cited target | v" + rep.from_version + " | v" + rep.to_version + " | what changed | cited by |")
    a("|---|---|---|---|---|---|")
    for x in rep.cited:
        by = ", ".join(f"{fl}:{ln}" for fl, ln in sorted({(u.file, u.line) for u in x.uses}))
        status = x.status + (" ⚠ breaks" if x.breaks else "")
        a(f"| {status} | `{_md_escape(x.subject)}` | {x.old or '—'} | {x.new or '—'} | {_md_escape(x.detail) or '—'} | {by} |")
    a("")
    details = [x for x in rep.cited if x.status != "unchanged" or x.breaks]
    if details:
        a("### Details")
        a("")
    for x in details:
        a(f"#### `{x.subject}` — {x.status}")
        a("")
        if x.detail:
            a(f"{x.detail}.")
            a("")
        for an in x.anchors:
            if not an.resolves:
                sug = f"; candidates: {', '.join(f'`{s}`' for s in an.suggestions)}" if an.suggestions else ""
                a(f"- anchor `{_md_escape(an.anchor)}` **breaks**: {an.error}{sug}")
        if x.suggestions and x.status in ("removed", "moved"):
            a(f"- nearest in v{rep.to_version}: " + ", ".join(f"`{s}`" for s in x.suggestions))
        a("")
        span = _span(x)
        if x.diff:
            a("```diff")
            L.extend(x.diff)
            if x.diff_truncated:
                a(f"… {x.diff_truncated} more diff lines (diff the trees for the rest)")
            a("```")
            a("")
        elif x.body_changed:
            a(f"- diff not shown ({span} lines; diff the trees: `diff -u {{pinned tree}}/{x.old.split(':')[0]} "
              f"{{candidate tree}}/{(x.new or x.old).split(':')[0]}`)")
            a("")
    a("## Pages affected")
    a("")
    if not affected:
        a("None.")
        a("")
    for dn, p in sorted(affected.items()):
        a(f"- `{p['file']}` ({p['title']}{'' if p['chapter'] else ', not a curriculum chapter'}):")
        cites = [r for r in p["reasons"] if r.startswith("cites ")]
        by_status: dict[str, int] = defaultdict(int)
        for r in cites:
            by_status[r.rsplit("(", 1)[1].split(")")[0].split(" + ")[0]] += 1
        if cites:
            a("  - cites " + ", ".join(f"{n} {st}" for st, n in sorted(by_status.items())) + " source targets")
        for r in cites:
            if "anchor breaks" in r:
                a(f"  - {r}")
        for r in p["reasons"]:
            if not r.startswith("cites "):
                a(f"  - {r}")
    a("")
    a("## Source areas of the curriculum")
    a("")
    a("Changed files (added / removed / modified) inside each chapter's `source_areas` globs. "
      "Written chapters are listed file by file below the table.")
    a("")
    a("| chapter | status | source_areas | + | − | ~ |")
    a("|---|---|---|---|---|---|")
    for ar in rep.areas:
        a(f"| `{ar.path}` | {ar.status} | {', '.join(f'`{g}`' for g in ar.source_areas)} | {len(ar.added)} | {len(ar.removed)} | {len(ar.modified)} |")
    a("")
    for ar in rep.areas:
        if ar.status != "written" or not ar.n_changed:
            continue
        a(f"### `{ar.path}` — {ar.title}")
        a("")
        for label, items in (("added", ar.added), ("removed", ar.removed), ("modified", ar.modified)):
            if not items:
                continue
            shown = items[:MAX_FILES_LISTED]
            a(f"- {label} ({len(items)}): " + ", ".join(f"`{p}`" for p in shown) + (f", … {len(items) - len(shown)} more" if len(items) > len(shown) else ""))
        a("")
    a("## Changed files no chapter covers")
    a("")
    a("Indexed files only; the source-map chapter (whose globs take every indexed directory whole) does not count "
      "as covering, so this is what no chapter *specifically* covers.")
    a("")
    if not rep.uncovered:
        a("None.")
    elif len(rep.uncovered) <= MAX_FILES_LISTED:
        for p in rep.uncovered:
            a(f"- `{p}`")
    else:
        a(f"{len(rep.uncovered)} files, by directory:")
        a("")
        a("| directory | changed files |")
        a("|---|---|")
        for d, n in _by_dir(rep.uncovered, 3):
            a(f"| `{d}` | {n} |")
    a("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(L))

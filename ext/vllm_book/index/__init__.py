"""The source index of the pinned vLLM tree (no Sphinx imports).

::

    from vllm_book.index import build_index
    index = build_index(root)                 # root holds vllm/ and csrc/
    index.files["vllm/v1/core/sched/scheduler.py"].symbols
    index.lookup("vllm/v1/core/sched/scheduler.py", "Scheduler.schedule")

Everything under ``dirs`` that is a browsable text file is indexed
(:data:`EXTENSIONS`); Python files get symbols from :mod:`.python`, C/C++/CUDA
files from Universal Ctags (:mod:`.cpp`), and both get cross-references
(:mod:`.xref`).  Results are cached per file (re-parsed only when size or
mtime change) and as a whole keyed by the content key of the tree
(:mod:`.cache`).

Which definition a qualname means
=================================

A file may define a qualname several times (``Symbol.ordinal`` 0, 1, …).
:func:`preferred` picks the one an anchor *without* ``#<ordinal>`` means:

1. one definition → it;
2. ``@typing.overload`` stubs are dropped when an implementation exists →
   if one definition is left, it;
3. if all that is left are accessors of one property (``@property`` getter,
   ``@x.setter``, ``@x.deleter``) → the getter, with the range spanning every
   accessor (first ``start`` to last ``end``);
4. otherwise the anchor is **ambiguous** (conditional definitions, C++
   overloads and specialisations): ``None``; the anchor must say which one
   with ``#<ordinal>``.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

from .model import FileIndex, Lang, Ref, Symbol

__all__ = [
    "EXTENSIONS",
    "Choice",
    "FileIndex",
    "Ref",
    "SourceIndex",
    "Symbol",
    "build_index",
    "lang_of",
    "preferred",
]

#: bump when the parsers or the pickled layout change (invalidates caches)
INDEX_VERSION = 9

PY_EXTS = frozenset({"py", "pyi"})
CPP_EXTS = frozenset({"cu", "cuh", "cpp", "cc", "cxx", "c", "h", "hpp", "hh", "hxx", "inl"})
TEXT_EXTS = frozenset(
    {"json", "yaml", "yml", "toml", "txt", "md", "rst", "jinja", "j2", "sh", "cmake", "cfg", "ini", "in", "js", "css", "proto"}
)
EXTENSIONS = PY_EXTS | CPP_EXTS | TEXT_EXTS
#: extensionless files that are browsable
TEXT_NAMES = frozenset({"README", "LICENSE", "Makefile", "CMakeLists.txt", "Dockerfile"})
SKIP_DIRS = frozenset({"__pycache__", "node_modules"})
MAX_BYTES = 4 << 20
#: a worker process only pays off for this many files
MIN_FILES_PER_JOB = 50


def lang_of(path: str) -> Lang | None:
    """The :data:`model.Lang` of a browsable path, ``None`` when not browsable."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return "text" if name in TEXT_NAMES else None
    ext = name.rsplit(".", 1)[-1].lower()
    if ext in PY_EXTS:
        return "python"
    if ext in CPP_EXTS:
        return "cpp"
    if ext in TEXT_EXTS or name in TEXT_NAMES:
        return "text"
    return None


def _symbol_row(s: Symbol) -> tuple:
    return (s.qualname, s.kind, s.path, s.start, s.def_line, s.end, s.ordinal, s.tags)


def _ref_row(r: Ref) -> tuple:
    return (r.line, r.col, r.end_col, r.target_path, r.target_line, r.target_qualname)


_SET_SYMBOLS = FileIndex.__dict__["symbols"].__set__
_GET_SYMBOLS = FileIndex.__dict__["symbols"].__get__
_SET_REFS = FileIndex.__dict__["refs"].__set__
_GET_REFS = FileIndex.__dict__["refs"].__get__


class _LazyFileIndex(FileIndex):
    """A :class:`FileIndex` loaded from the cache: rows become objects on access."""

    __slots__ = ("_raw_symbols", "_raw_refs")

    @classmethod
    def make(cls, path: str, lang: Lang, sha256: str, n_lines: int, syms: list[tuple], refs: list[tuple]) -> _LazyFileIndex:
        self = object.__new__(cls)
        self.path, self.lang, self.sha256, self.n_lines = path, lang, sha256, n_lines
        self._raw_symbols, self._raw_refs = syms, refs
        return self

    def raw(self) -> tuple[list[tuple], list[tuple]]:
        syms = self._raw_symbols if self._raw_symbols is not None else [_symbol_row(s) for s in self.symbols]
        refs = self._raw_refs if self._raw_refs is not None else [_ref_row(r) for r in self.refs]
        return syms, refs

    @property  # type: ignore[override]
    def symbols(self) -> list[Symbol]:
        if self._raw_symbols is not None:
            _SET_SYMBOLS(self, [Symbol(*row) for row in self._raw_symbols])
            self._raw_symbols = None
        return _GET_SYMBOLS(self)

    @symbols.setter
    def symbols(self, value: list[Symbol]) -> None:
        self._raw_symbols = None
        _SET_SYMBOLS(self, value)

    @property  # type: ignore[override]
    def refs(self) -> list[Ref]:
        if self._raw_refs is not None:
            _SET_REFS(self, [Ref(*row) for row in self._raw_refs])
            self._raw_refs = None
        return _GET_REFS(self)

    @refs.setter
    def refs(self, value: list[Ref]) -> None:
        self._raw_refs = None
        _SET_REFS(self, value)

    def __reduce__(self):
        return (FileIndex, (self.path, self.lang, self.sha256, self.n_lines, self.symbols, self.refs))


@dataclasses.dataclass(frozen=True, slots=True)
class Choice:
    """What an anchor to a qualname resolves to (see :func:`preferred`)."""

    symbol: Symbol
    start: int
    end: int


def preferred(symbols: Sequence[Symbol]) -> Choice | None:
    """The definition an anchor without ``#<ordinal>`` means; ``None`` = ambiguous."""
    if not symbols:
        return None
    if len(symbols) == 1:
        s = symbols[0]
        return Choice(s, s.start, s.end)
    impl = [s for s in symbols if "overload" not in s.tags] or list(symbols)
    if len(impl) == 1:
        s = impl[0]
        return Choice(s, s.start, s.end)
    if all(s.kind == "property" for s in impl):
        getters = [s for s in impl if "getter" in s.tags] or impl
        if len(getters) == 1:
            return Choice(getters[0], min(s.start for s in impl), max(s.end for s in impl))
    return None


class SourceIndex:
    """Symbols, refs and directory listing of one source tree."""

    def __init__(self, root: Path, key: str, files: dict[str, FileIndex],
                 problems: dict[str, tuple[int, str]] | None = None) -> None:
        self.root = Path(root)
        self.key = key
        self.files = files
        #: path → (line, reason) of each file the index could not fully use (NUL bytes, not UTF-8,
        #: a Python syntax error); both gates report them (``vllm_book.anchors.index_problems``)
        self.problems = dict(problems or {})
        self._quals: dict[str, dict[str, list[Symbol]]] | None = None
        self._dirs: dict[str, list[str]] | None = None

    # pickling: compact rows (tuples), never the derived tables; files come
    # back as lazy FileIndex objects whose symbols/refs materialise on first
    # access (a warm load of the whole tree then costs ~0.2 s, not ~2 s).
    def __getstate__(self) -> dict:
        rows = []
        for f in self.files.values():
            if isinstance(f, _LazyFileIndex):
                syms, refs = f.raw()
            else:
                syms = [_symbol_row(s) for s in f.symbols]
                refs = [_ref_row(r) for r in f.refs]
            rows.append((f.path, f.lang, f.sha256, f.n_lines, syms, refs))
        return {"v": INDEX_VERSION, "root": str(self.root), "key": self.key, "rows": rows, "problems": self.problems}

    def __setstate__(self, state: dict) -> None:
        if state.get("v") != INDEX_VERSION:
            raise ValueError("index pickle from another version")
        files = {row[0]: _LazyFileIndex.make(*row) for row in state["rows"]}
        self.__init__(Path(state["root"]), state["key"], files, state.get("problems"))  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"<SourceIndex {self.root} files={len(self.files)} key={self.key[:12]}>"

    # -- tables
    def quals(self, path: str) -> dict[str, list[Symbol]]:
        """qualname → definitions (ordinal order) of one file (``{}`` if none)."""
        if self._quals is None:
            self._quals = {}
        hit = self._quals.get(path)
        if hit is None:
            f = self.files.get(path)
            d: dict[str, list[Symbol]] = defaultdict(list)
            for s in f.symbols if f else ():
                d[s.qualname].append(s)
            for v in d.values():
                v.sort(key=lambda s: s.ordinal)
            hit = self._quals[path] = dict(d)
        return hit

    def dirs(self) -> dict[str, list[str]]:
        """``"vllm/v1/core"`` → sorted children (subdirectories end with ``/``); ``""`` is the root."""
        if self._dirs is None:
            tree: dict[str, set[str]] = defaultdict(set)
            for path in self.files:
                parts = path.split("/")
                for i in range(len(parts)):
                    parent = "/".join(parts[:i])
                    child = parts[i] + ("/" if i < len(parts) - 1 else "")
                    tree[parent].add(child)
            self._dirs = {d: sorted(children) for d, children in sorted(tree.items())}
        return self._dirs

    def is_dir(self, path: str) -> bool:
        return path.strip("/") in self.dirs()

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise KeyError(f"{path}: not an indexed file of {self.root}")
        return (self.root / path).read_bytes().decode("utf-8", "replace")

    def lines(self, path: str) -> list[str]:
        """The file's lines without line ends (``lines[0]`` is line 1)."""
        return self.read_text(path).splitlines()

    def symbols(self, path: str) -> list[Symbol]:
        f = self.files.get(path)
        return list(f.symbols) if f else []

    def lookup(self, path: str, qualname: str) -> list[Symbol]:
        """All definitions of *qualname* in *path* (ordinal order).

        C/C++ symbols are also found by their bare name (``reshape_and_cache``
        for ``vllm.reshape_and_cache``) when exactly one qualname in the file
        has that name.
        """
        quals = self.quals(path)
        if not quals:
            return []
        hit = quals.get(qualname)
        if hit:
            return list(hit)
        f = self.files[path]
        if f.lang == "cpp":
            name = qualname.rsplit(".", 1)[-1]
            matching = {q for q in quals if q == name or q.endswith("." + name)}
            if "." in qualname:
                matching = {q for q in matching if q.endswith("." + qualname)}
            if len(matching) == 1:
                return list(quals[matching.pop()])
        return []

    def symbol_at(self, path: str, line: int) -> Symbol | None:
        """The innermost symbol whose range contains *line*."""
        best = None
        for s in self.files[path].symbols if path in self.files else ():
            if s.start <= line <= s.end and (best is None or (s.end - s.start) <= (best.end - best.start)):
                best = s
        return best

    def all_symbols(self) -> Iterator[Symbol]:
        for f in self.files.values():
            yield from f.symbols

    # -- did you mean
    def suggest_paths(self, path: str, n: int = 5) -> list[str]:
        path = path.strip("/")
        base = path.rsplit("/", 1)[-1]
        same_name = sorted(p for p in self.files if p.rsplit("/", 1)[-1] == base and p != path)
        pool = list(self.files) + [d + "/" for d in self.dirs() if d]
        close = difflib.get_close_matches(path, pool, n=n, cutoff=0.85)
        by_base: dict[str, list[str]] = defaultdict(list)
        for p in self.files:
            by_base[p.rsplit("/", 1)[-1]].append(p)
        moved = [p for b in difflib.get_close_matches(base, list(by_base), n=n, cutoff=0.85) for p in sorted(by_base[b])]
        out: list[str] = []
        for p in [*same_name, *close, *moved]:
            if p not in out:
                out.append(p)
        return out[:n]

    def suggest(self, path: str | None, qualname: str, n: int = 5) -> list[str]:
        """Did-you-mean for a missing ``path::qualname``, as ``"path::Qual.name"``.

        Order: close qualnames in the same file; then the same last name
        defined elsewhere in the tree (a moved symbol); then close names
        tree-wide.
        """
        out: list[str] = []

        def add(p: str, q: str) -> None:
            s = f"{p}::{q}"
            if s not in out:
                out.append(s)

        name = qualname.rsplit(".", 1)[-1]
        if path and self.quals(path):
            quals = list(self.quals(path))
            for q in difflib.get_close_matches(qualname, quals, n=n, cutoff=0.75):
                add(path, q)
            by_last = {q.rsplit(".", 1)[-1]: q for q in quals}
            for last in difflib.get_close_matches(name, list(by_last), n=n, cutoff=0.8):
                add(path, by_last[last])
        if len(out) < n:
            exact = [s for s in self.all_symbols() if s.name == name and s.ordinal == 0]
            exact.sort(key=lambda s: (s.qualname != qualname, s.path))
            for s in exact[: n]:
                add(s.path, s.qualname)
        if len(out) < n:
            names: dict[str, Symbol] = {}
            for s in self.all_symbols():
                names.setdefault(s.name, s)
            for last in difflib.get_close_matches(name, list(names), n=n, cutoff=0.75):
                s = names[last]
                add(s.path, s.qualname)
        return out[:n]


# --------------------------------------------------------------------------
# building


def scan(root: Path, dirs: Sequence[str], oversized: list[tuple[str, int]] | None = None) -> list[tuple[str, int, int]]:
    """``[(path, size, mtime_ns)]`` of every browsable file under *dirs*, sorted.

    Browsable files over :data:`MAX_BYTES` are left out; *oversized* (when given) collects them as ``(path, size)``.
    """
    out = []
    root = Path(root)
    for top in dirs:
        top = top.strip("/")
        base = root / top
        if not base.is_dir():
            continue
        stack = [base]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                if e.name.startswith("."):
                    continue
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_DIRS and not e.name.endswith(".egg-info"):
                        stack.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    rel = Path(e.path).relative_to(root).as_posix()
                    if lang_of(rel) is None:
                        continue
                    st = e.stat(follow_symlinks=False)
                    if st.st_size > MAX_BYTES:
                        if oversized is not None:
                            oversized.append((rel, st.st_size))
                        continue
                    out.append((rel, st.st_size, st.st_mtime_ns))
    out.sort()
    return out


def file_problem(data: bytes) -> tuple[int, str]:
    """``(line, reason)`` when *data* is not a text file the index and the browser can use, else ``(0, "")``."""
    nul = data.find(b"\0")
    if nul != -1:
        return data.count(b"\n", 0, nul) + 1, "it contains a NUL byte (text files never do)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, exc.start) + 1, f"it is not valid UTF-8 (byte 0x{data[exc.start]:02x})"
    return 0, ""


def _parse_one(root: str, path: str) -> tuple:
    """Worker: (sha256, n_lines, lang, symbols, extra, problem) for one file; problem = (line, reason) or ()."""
    from . import cpp, python

    data = (Path(root) / path).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    text = data.decode("utf-8", "replace")
    n_lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    lang = lang_of(path)
    line, reason = file_problem(data)
    problem = (line, reason) if reason else ()
    if lang == "python":
        symbols, facts = python.parse(path, data)
        if facts is None and not problem:
            line, reason = python.parse_error(path, data)
            problem = (line, reason) if reason else ()
        return (sha, n_lines, lang, symbols, facts, problem)
    if lang == "cpp":
        extra = (cpp.token_candidates(text), cpp.include_candidates(text), cpp.op_registrations(path, text))
        return (sha, n_lines, lang, [], extra, problem)
    return (sha, n_lines, lang, [], None, problem)


def _parse_chunk(root: str, paths: list[str]) -> list[tuple]:
    return [_parse_one(root, p) for p in paths]


def _parse_many(root: Path, paths: list[str], jobs: int) -> dict[str, tuple]:
    if not paths:
        return {}
    if jobs <= 0:
        jobs = os.cpu_count() or 1
    jobs = min(jobs, max(1, len(paths) // MIN_FILES_PER_JOB))
    if jobs <= 1:
        return {p: _parse_one(str(root), p) for p in paths}
    import concurrent.futures as cf
    import multiprocessing

    # biggest first, spread round-robin so chunks are balanced
    order = sorted(paths, key=lambda p: -(root / p).stat().st_size)
    n_chunks = jobs * 4
    chunks = [order[i::n_chunks] for i in range(n_chunks)]
    out: dict[str, tuple] = {}
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for chunk, results in zip(chunks, pool.map(_parse_chunk, [str(root)] * len(chunks), chunks)):
            out.update(zip(chunk, results))
    return out


def _link(root: Path, parsed: dict[str, tuple], ctags_symbols: dict[str, list[Symbol]]) -> dict[str, FileIndex]:
    from . import xref

    files: dict[str, FileIndex] = {}
    quals: dict[str, dict[str, list[Symbol]]] = {}
    for path, (sha, n_lines, lang, symbols, _extra, _problem) in parsed.items():
        if lang == "cpp":
            symbols = ctags_symbols.get(path, [])
        files[path] = FileIndex(path, lang, sha, n_lines, list(symbols), [])
        if symbols:
            d: dict[str, list[Symbol]] = defaultdict(list)
            for s in symbols:
                d[s.qualname].append(s)
            quals[path] = d
    py_facts = {p: v[4] for p, v in parsed.items() if v[2] == "python" and v[4] is not None}
    regs = []
    for p, v in parsed.items():
        if v[2] == "cpp" and v[4]:
            for ns, op, fn, line in v[4][2]:
                regs.append((p, ns, op, fn, line))
    cres = xref.CppResolver(quals, regs)
    cres.paths = set(files)
    pres = xref.PyResolver(py_facts, quals)
    for path, f in files.items():
        v = parsed[path]
        if f.lang == "python" and v[4] is not None:
            f.refs = xref.python_refs(path, v[4], pres, cres.op_target)
        elif f.lang == "cpp" and v[4]:
            f.refs = cres.refs(path, v[4][0], v[4][1])
    return files


def tree_key(entries: Sequence[tuple[str, str]]) -> str:
    h = hashlib.sha256(f"vllm-book-index:{INDEX_VERSION}\n".encode())
    for path, sha in entries:
        h.update(f"{path}\0{sha}\n".encode())
    return h.hexdigest()


def build_index(
    root: Path,
    dirs: Sequence[str] = ("vllm", "csrc"),
    *,
    cache_dir: Path | None = None,
    jobs: int = 0,
) -> SourceIndex:
    """Index *root* (its *dirs*), reusing/refreshing the cache in *cache_dir*.

    ``jobs``: worker processes for parsing (0 = one per CPU, 1 = in-process).
    """
    root = Path(root).resolve()
    dirs = tuple(d.strip("/") for d in dirs)
    oversized: list[tuple[str, int]] = []
    entries = scan(root, dirs, oversized)
    too_big = {p: (1, f"it is {size:,} bytes, over the index's limit of {MAX_BYTES:,} bytes (not indexed, not browsable)")
               for p, size in oversized}
    index = _build(root, dirs, entries, cache_dir, jobs)
    index.problems.update(too_big)  # found by every scan, never cached
    return index


def _build(root: Path, dirs: tuple[str, ...], entries: list[tuple[str, int, int]], cache_dir: Path | None,
           jobs: int) -> SourceIndex:
    from . import cache as cache_mod
    from . import cpp

    store = cache_mod.Cache(cache_dir, root, dirs) if cache_dir else None
    if store is not None:
        hit = store.load_if_unchanged(entries)
        if hit is not None:
            return hit
    old = store.load_parsed() if store is not None else {}
    parsed: dict[str, tuple] = {}
    todo = []
    for path, size, mtime in entries:
        rec = old.get(path)
        if rec is not None and rec[0] == size and rec[1] == mtime:
            parsed[path] = rec[2]
        else:
            todo.append(path)
    parsed.update(_parse_many(root, todo, jobs))
    # C/C++ symbols: one ctags run over the changed files, then cached
    cpp_paths = [p for p, *_ in entries if parsed[p][2] == "cpp"]
    ctags_syms: dict[str, list[Symbol]] = {}
    todo_set = set(todo)
    stale = [p for p in cpp_paths if p in todo_set]
    if stale:
        tags = cpp.run_ctags(str(root), stale)
        for p in stale:
            text = (root / p).read_bytes().decode("utf-8", "replace")
            syms = cpp.symbols_from_tags(p, tags.get(p, []), text)
            sha, n, lang, _s, extra, problem = parsed[p]
            parsed[p] = (sha, n, lang, syms, extra, problem)
    for p in cpp_paths:
        ctags_syms[p] = parsed[p][3]
    key = tree_key([(p, parsed[p][0]) for p, *_ in entries])
    if store is not None:
        idx = store.load_index(key)
        if idx is not None:
            store.save_parsed(entries, parsed, key)
            return idx
    files = _link(root, {p: parsed[p] for p, *_ in entries}, ctags_syms)
    index = SourceIndex(root, key, files, {p: parsed[p][5] for p, *_ in entries if parsed[p][5]})
    if store is not None:
        store.save_parsed(entries, parsed, key)
        store.save_index(index)
    return index


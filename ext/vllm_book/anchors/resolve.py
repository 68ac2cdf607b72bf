"""Anchor targets: parsing and resolution against a :class:`SourceIndex`.

No Sphinx imports: ``make validate`` and the tests use this directly.

Grammar (see ``docs/anchors.md``)::

    target    := dir | file [ ":" quoted ] | file "::" qualname [ "#" N ] [ ":" quoted ]
    dir       := path "/"                       vllm/v1/attention/backends/
    file      := path                           vllm/v1/core/sched/scheduler.py
    qualname  := name ("." name)*              Scheduler.schedule, vllm.reshape_and_cache_kernel
    N         := ordinal of a redefinition      get#2  (0-based, see Symbol.ordinal)
    quoted    := '"' text '"'                   the ONE line (of the symbol, or of the file) containing text
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Literal

from ..index import preferred
from ..problems import Problem

if TYPE_CHECKING:
    from ..index import SourceIndex
    from ..index.model import Symbol

Kind = Literal["dir", "file", "symbol", "line"]
OVERSIZED_FIX = ("restore the file from the pinned release (rm -rf vllm && make vllm); if the release really has a file "
                 "this large, raise MAX_BYTES in ext/vllm_book/index/__init__.py")

_TARGET = re.compile(
    r"""^(?P<path>[^:"\s][^:"]*?)
        (?:::(?P<qual>[^#:"\s]+)(?:\#(?P<ord>\d+))?)?
        (?::"(?P<text>.+)")?$""",
    re.X | re.S,
)


class AnchorError(ValueError):
    """A target that does not resolve; ``suggestions`` are valid targets."""

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.suggestions = list(suggestions or [])

    def __str__(self) -> str:
        if not self.suggestions:
            return self.message
        return f"{self.message}; did you mean: {', '.join(self.suggestions)}"

    @property
    def fix(self) -> str:
        """The ``fix:`` line both gates print."""
        if self.suggestions:
            return f"use one of: {', '.join(self.suggestions)}"
        if "index's limit" in self.message:
            return OVERSIZED_FIX
        if "could not be indexed" in self.message or "was not indexed" in self.message:
            return "restore the file from the pinned release (rm -rf vllm && make vllm)"
        return "correct the path/qualname (see docs/anchors.md); browse the tree under vllm/"


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    path: str  # without trailing "/" for dirs
    is_dir: bool = False
    qualname: str = ""
    ordinal: int | None = None
    text: str | None = None

    def __str__(self) -> str:
        if self.is_dir:
            return self.path + "/"
        s = self.path
        if self.qualname:
            s += f"::{self.qualname}"
            if self.ordinal is not None:
                s += f"#{self.ordinal}"
        if self.text is not None:
            s += f':"{self.text}"'
        return s


@dataclasses.dataclass(frozen=True, slots=True)
class Resolution:
    path: str
    start: int  # 0 for a directory
    end: int
    symbol: Symbol | None
    kind: Kind
    lang: str = ""  # python | cpp | text ("" for a directory)

    @property
    def qualname(self) -> str:
        """The (enclosing) symbol's qualname, ``""`` for files, directories and file-level lines."""
        return self.symbol.qualname if self.symbol is not None else ""

    @property
    def location(self) -> str:
        """``path:start-end`` (``path:line`` for one line, ``path/`` for a directory)."""
        if self.kind == "dir":
            return self.path + "/"
        if self.start == self.end:
            return f"{self.path}:{self.start}"
        return f"{self.path}:{self.start}-{self.end}"


def parse_target(raw: str) -> Target:
    s = raw.strip()
    if not s:
        raise AnchorError("empty source anchor")
    if s.endswith("/") and "::" not in s and '"' not in s:
        path = s.strip("/")
        _check_path(path, raw)
        return Target(path, is_dir=True)
    m = _TARGET.match(s)
    if not m:
        raise AnchorError(
            f"malformed source anchor {raw!r}: expected path, path/, path::Qual.name[#N] or "
            f'path[::Qual.name]:"text"'
        )
    path = m.group("path").strip()
    _check_path(path, raw)
    ordinal = int(m.group("ord")) if m.group("ord") is not None else None
    return Target(path, False, m.group("qual") or "", ordinal, m.group("text"))


def _check_path(path: str, raw: str) -> None:
    if path.startswith("/") or ".." in path.split("/") or "\\" in path:
        raise AnchorError(f"source anchor {raw!r}: the path must be relative to the vLLM tree (e.g. vllm/v1/...)")


def _line_matches(lines: list[str], start: int, end: int, text: str) -> list[int]:
    hits = [n for n in range(start, end + 1) if text in lines[n - 1]]
    if hits:
        return hits
    norm = " ".join(text.split())
    return [n for n in range(start, end + 1) if norm and norm in " ".join(lines[n - 1].split())]


def resolve(index: SourceIndex, target: Target | str) -> Resolution:
    """Resolve *target*; raise :class:`AnchorError` (with did-you-mean) when it does not."""
    t = parse_target(target) if isinstance(target, str) else target
    if t.is_dir:
        if not t.path or not index.is_dir(t.path):
            raise AnchorError(f"no directory {t.path}/ in the source tree", index.suggest_paths(t.path + "/"))
        return Resolution(t.path, 0, 0, None, "dir")
    f = index.files.get(t.path)
    if f is None:
        if index.is_dir(t.path):
            raise AnchorError(f"{t.path} is a directory: write it with a trailing slash ({t.path}/)", [t.path + "/"])
        problem = getattr(index, "problems", {}).get(t.path)
        if problem:
            raise AnchorError(f"{t.path} is in the tree but was not indexed: {problem[1]}")
        raise AnchorError(f"no file {t.path} in the source tree", index.suggest_paths(t.path))
    if not t.qualname:
        if t.text is None:
            return Resolution(t.path, 1, max(f.n_lines, 1), None, "file", f.lang)
        return _line(index, t, 1, max(f.n_lines, 1), None, f.lang)
    symbols = index.lookup(t.path, t.qualname)
    if not symbols:
        problem = getattr(index, "problems", {}).get(t.path)
        if problem:
            raise AnchorError(f"{t.path} could not be indexed (line {problem[0]}: {problem[1]}), so {t.qualname} "
                              "cannot be found in it")
        raise AnchorError(f"no symbol {t.qualname} in {t.path}", index.suggest(t.path, t.qualname))
    if t.ordinal is not None:
        chosen = [s for s in symbols if s.ordinal == t.ordinal]
        if not chosen:
            raise AnchorError(
                f"{t.path}::{t.qualname} has no definition #{t.ordinal} "
                f"(there are {len(symbols)}: {_list_defs(t, symbols)})"
            )
        sym = chosen[0]
        start, end = sym.start, sym.end
    else:
        choice = preferred(symbols)
        if choice is None:
            raise AnchorError(
                f"{t.path}::{t.qualname} is ambiguous: {len(symbols)} definitions "
                f"({_list_defs(t, symbols)}); add #N to pick one",
                [f"{t.path}::{symbols[0].qualname}#{s.ordinal}" for s in symbols],
            )
        sym, start, end = choice.symbol, choice.start, choice.end
    if t.text is None:
        return Resolution(t.path, start, end, sym, "symbol", f.lang)
    return _line(index, t, start, end, sym, f.lang)


def _list_defs(t: Target, symbols: list[Symbol]) -> str:
    out = []
    for s in symbols:
        extra = f" {','.join(s.tags)}" if s.tags else ""
        out.append(f"#{s.ordinal} line {s.def_line}{extra}")
    return "; ".join(out)


def _line(index: SourceIndex, t: Target, start: int, end: int, sym: Symbol | None, lang: str) -> Resolution:
    assert t.text is not None
    lines = index.lines(t.path)
    end = min(end, len(lines))
    hits = _line_matches(lines, start, end, t.text)
    where = f"{t.path}::{sym.qualname} (lines {start}-{end})" if sym else f"{t.path}"
    if not hits:
        raise AnchorError(f'no line of {where} contains "{t.text}"')
    if len(hits) > 1:
        shown = ", ".join(str(n) for n in hits[:12]) + (" …" if len(hits) > 12 else "")
        raise AnchorError(f'"{t.text}" matches {len(hits)} lines of {where} (lines {shown}); quote a longer, unique text')
    n = hits[0]
    inner = index.symbol_at(t.path, n) if sym is None else sym
    return Resolution(t.path, n, n, inner, "line", lang)


def index_problems(index: SourceIndex, label: str) -> list[Problem]:
    """Every file of *index* it could not fully use, as problems at ``<label>/<path>:<line>``.

    ``make validate`` and the build (``builder-inited``) both report these: a file
    silently without symbols makes every anchor into it fail with a misleading
    "no symbol" message, and the browser would show it garbled.
    """
    out = []
    for path, (line, reason) in sorted(getattr(index, "problems", {}).items()):
        where = f"{label.rstrip('/')}/{path}"
        lang = index.files[path].lang if path in index.files else ""
        out.append(Problem(where, line, f"the index cannot use this file: {reason}"
                           + ("; anchors into it find no symbols" if lang == "python" else ""),
                           OVERSIZED_FIX if "index's limit" in reason else
                           "restore the file from the pinned release (rm -rf vllm && make vllm); an edited tree is not "
                           "the pinned one", "index"))
    return out


def match_lines(lines: list[str], start: int, end: int, text: str) -> list[int]:
    """Line numbers in ``start..end`` containing *text* (exact, then whitespace-insensitive)."""
    return _line_matches(lines, start, end, text)

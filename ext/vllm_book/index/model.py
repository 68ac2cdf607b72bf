"""Data model of the source index (no Sphinx imports).

This is the contract between the indexer (``index/``), the anchor domain
(``domain.py``), the source browser (``browser/``) and the sync tools
(``sync/``).  Paths are POSIX paths relative to the tree root
(``vllm/v1/core/sched/scheduler.py``, ``csrc/cache_kernels.cu``); lines are
1-based and inclusive.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

Lang = Literal["python", "cpp", "text"]

SymbolKind = Literal[
    "class", "function", "method", "property", "variable",  # python
    "cpp-function", "cpp-class", "cpp-struct", "cpp-namespace", "cpp-macro", "cpp-enum", "cpp-typedef",
    # added by the indexer (additive): declarations without a body in the
    # file, namespace/file-scope variables, unions
    "cpp-prototype", "cpp-variable", "cpp-union",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Symbol:
    """A named definition in one file.

    ``qualname`` is dotted for Python (``Scheduler.schedule``,
    ``Outer.Inner.method``) and ``::``-free for C++ (the ctags scope joined by
    ``.``, e.g. ``vllm.paged_attention_v1`` is also reachable as its bare name
    ``paged_attention_v1`` when that is unique in the file).

    ``start`` includes decorators; ``def_line`` is the ``def``/``class`` line;
    ``end`` is the last line of the body.
    """

    qualname: str
    kind: SymbolKind
    path: str
    start: int
    def_line: int
    end: int
    #: 0 for the first definition of that qualname in the file, 1, 2… for
    #: redefinitions (overloads, property setters, conditional definitions).
    ordinal: int = 0
    #: free-form markers added by the indexer (additive): "overload"
    #: (typing.overload), "getter"/"setter"/"deleter" (property accessors),
    #: "instance" (a ``self.x = …`` attribute found in ``__init__``),
    #: "member" (C++: declared inside a class/struct).
    tags: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclasses.dataclass(frozen=True, slots=True)
class Ref:
    """A cross-link: the token at (line, col..end_col) points to a definition."""

    line: int
    col: int  # 0-based column of the first character, in str (not byte) units
    end_col: int
    target_path: str
    target_line: int
    target_qualname: str = ""  # "" when the target is a whole module/file


@dataclasses.dataclass(slots=True)
class FileIndex:
    path: str
    lang: Lang
    sha256: str  # of the file bytes; cache key for highlighting and pages
    n_lines: int
    symbols: list[Symbol] = dataclasses.field(default_factory=list)
    refs: list[Ref] = dataclasses.field(default_factory=list)

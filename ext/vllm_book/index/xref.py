"""Name → definition resolution across files (Python and C++).

Python
======

Candidates from :mod:`.python` are resolved against every module of the
tree:

* a module-scope binding ``("sym", q)`` → that definition in the same file;
* ``import pkg.mod`` → the module file (``pkg/mod.py`` or
  ``pkg/mod/__init__.py``); ``from pkg.mod import name`` → ``name`` in that
  module, **following re-exports** (``from .x import y`` chains through
  ``__init__.py`` files, star imports) and falling back to the submodule
  ``pkg.mod.name``;
* ``X.a.b`` → attributes walked through modules (exports) and classes
  (members, then in-tree base classes, depth ≤ 8);
* ``self.x`` / ``cls.x`` inside a method of ``C`` → member ``x`` of ``C``
  (methods, properties, class variables, ``__init__`` attributes) or of its
  in-tree bases;
* ``torch.ops.<ns>.<op>`` → the C++ function registered for ``<op>`` in
  ``<ns>`` (see :func:`.cpp.op_registrations`).

A target is always a definition: the preferred symbol of the qualname
(:func:`vllm_book.index.preferred`), linked at its ``def_line``; modules link
at line 1 with ``target_qualname == ""``.

C++
===

See :mod:`.cpp`: same-file definitions first, then the unique tree-wide one.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from typing import TYPE_CHECKING

from .model import Ref, Symbol

if TYPE_CHECKING:
    from .python import PyFacts

MAX_DEPTH = 8
#: C++ trees of non-CUDA backends; their registrations lose to CUDA ones
ALT_BACKENDS = ("csrc/cpu/", "csrc/rocm/")
_NO = object()


def pick(symbols: list[Symbol]) -> Symbol:
    """The definition a link to *symbols* (one qualname, one file) lands on.

    Used for refs (never errors): the first non-overload definition, else the
    first one.
    """
    for s in symbols:
        if "overload" not in s.tags and s.tags[:1] != ("setter",) and s.tags[:1] != ("deleter",):
            return s
    return symbols[0]


class PyResolver:
    """Resolves Python binding chains over the whole tree (memoised)."""

    def __init__(self, facts: dict[str, PyFacts], symbols: dict[str, dict[str, list[Symbol]]]) -> None:
        self.facts = facts  # path -> facts
        self.symbols = symbols  # path -> qualname -> [Symbol]
        self.modules: dict[str, str] = {}  # module name -> path
        for path, f in facts.items():
            # a package's __init__ wins over a same-named module (cannot co-exist anyway)
            if f.module not in self.modules or f.is_package:
                self.modules[f.module] = path
        self._export_memo: dict[tuple[str, str], object] = {}
        self._member_memo: dict[tuple[str, str, str], object] = {}
        self._base_memo: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._active: set = set()

    # targets are (path, qualname); qualname "" = the module itself
    def module(self, name: str) -> tuple[str, str] | None:
        path = self.modules.get(name)
        return (path, "") if path else None

    def export(self, module: str, name: str) -> tuple[str, str] | None:
        key = (module, name)
        hit = self._export_memo.get(key, _NO)
        if hit is not _NO:
            return hit  # type: ignore[return-value]
        if key in self._active:
            return None
        self._active.add(key)
        try:
            res = self._export(module, name)
        finally:
            self._active.discard(key)
        self._export_memo[key] = res
        return res

    def _export(self, module: str, name: str) -> tuple[str, str] | None:
        path = self.modules.get(module)
        if path is None:
            return None
        facts = self.facts[path]
        b = facts.bindings.get(name)
        if b is not None:
            res = self.binding(path, b)
            if res is not None:
                return res
        sub = self.module(f"{module}.{name}")
        if sub:
            return sub
        for star in facts.star_imports:
            res = self.export(star, name)
            if res is not None:
                return res
        return None

    def binding(self, path: str, b: tuple) -> tuple[str, str] | None:
        tag = b[0]
        if tag == "sym":
            return (path, b[1]) if b[1] in self.symbols.get(path, ()) else None
        if tag == "mod":
            return self.module(b[1])
        if tag == "from":
            return self.export(b[1], b[2])
        if tag == "self":
            return (path, b[1]) if b[1] in self.symbols.get(path, ()) else None
        return None

    def bases(self, path: str, cls: str) -> list[tuple[str, str]]:
        key = (path, cls)
        if key in self._base_memo:
            return self._base_memo[key]
        self._base_memo[key] = []
        out = []
        for binding, attrs in self.facts[path].bases.get(cls, ()):
            t = self.chain(path, binding, attrs)
            if t is not None and t[1] and self._kind(t) == "class":
                out.append(t)
        self._base_memo[key] = out
        return out

    def _kind(self, target: tuple[str, str]) -> str:
        syms = self.symbols.get(target[0], {}).get(target[1])
        return pick(syms).kind if syms else ""

    def member(self, target: tuple[str, str], attr: str, depth: int = 0) -> tuple[str, str] | None:
        path, qual = target
        if not qual:
            f = self.facts.get(path)
            return self.export(f.module, attr) if f else None
        key = (path, qual, attr)
        hit = self._member_memo.get(key, _NO)
        if hit is not _NO:
            return hit  # type: ignore[return-value]
        self._member_memo[key] = None  # cycle guard
        res = None
        if self._kind(target) == "class":
            child = f"{qual}.{attr}"
            if child in self.symbols.get(path, ()):
                res = (path, child)
            elif depth < MAX_DEPTH:
                for base in self.bases(path, qual):
                    res = self.member(base, attr, depth + 1)
                    if res:
                        break
        self._member_memo[key] = res
        return res

    def chain(self, path: str, binding: tuple, attrs: tuple[str, ...]) -> tuple[str, str] | None:
        t = self.binding(path, binding)
        for a in attrs:
            if t is None:
                return None
            t = self.member(t, a)
        return t


def python_refs(
    path: str,
    facts: PyFacts,
    resolver: PyResolver,
    op_target,
) -> list[Ref]:
    out: list[Ref] = []
    symbols = resolver.symbols
    for line, col, end, module in facts.module_tokens:
        t = resolver.module(module)
        if t:
            out.append(Ref(line, col, end, t[0], 1, ""))
    for cand in facts.cands:
        if cand[0] == "b":
            _, line, col, end, binding, attrs = cand
            t = resolver.chain(path, binding, attrs)
        elif cand[0] == "op":
            _, line, col, end, ns, op = cand
            sym = op_target(ns, op)
            if sym is not None:
                out.append(Ref(line, col, end, sym.path, sym.def_line, sym.qualname))
            continue
        else:
            continue
        if t is None:
            continue
        tpath, tqual = t
        if not tqual:
            out.append(Ref(line, col, end, tpath, 1, ""))
            continue
        sym = pick(symbols[tpath][tqual])
        if tpath == path and line == sym.def_line:
            continue  # the definition itself
        out.append(Ref(line, col, end, tpath, sym.def_line, tqual))
    out.sort(key=lambda r: (r.line, r.col))
    # one ref per token
    dedup = []
    last = None
    for r in out:
        k = (r.line, r.col)
        if k != last:
            dedup.append(r)
            last = k
    return dedup


class CppResolver:
    def __init__(self, symbols: dict[str, dict[str, list[Symbol]]], registrations: list[tuple[str, str, str, str, int]]) -> None:
        self.by_name: dict[str, list[Symbol]] = defaultdict(list)
        self.file_names: dict[str, dict[str, list[Symbol]]] = {}
        self.paths = set(symbols)
        for path, quals in symbols.items():
            names: dict[str, list[Symbol]] = defaultdict(list)
            for syms in quals.values():
                for s in syms:
                    if s.kind.startswith("cpp-"):
                        names[s.name].append(s)
                        if s.kind != "cpp-namespace":
                            self.by_name[s.name].append(s)
            if names:
                self.file_names[path] = names
        self.registrations = registrations
        self._ops: dict[tuple[str, str], list[tuple[str, str, int]]] = defaultdict(list)
        for path, ns, op, fn, line in registrations:
            self._ops[(ns, op)].append((path, fn, line))
        self._op_memo: dict[tuple[str, str], Symbol | None] = {}

    def tree_unique(self, name: str, from_path: str = "") -> Symbol | None:
        alt = from_path.startswith(ALT_BACKENDS)
        cands = [
            s
            for s in self.by_name.get(name, ())
            if "member" not in s.tags and s.kind != "cpp-variable" and (not s.path.startswith(ALT_BACKENDS) or (alt and s.path.startswith(from_path.split("/", 2)[0] + "/" + from_path.split("/", 2)[1])))
        ]
        defs = [s for s in cands if s.kind != "cpp-prototype"]
        if not defs:
            return None
        if len({s.path for s in defs}) == 1:
            return min(defs, key=lambda s: s.def_line)
        return None

    def same_file(self, path: str, name: str) -> Symbol | None:
        syms = self.file_names.get(path, {}).get(name)
        if not syms:
            return None
        defs = [s for s in syms if s.kind not in ("cpp-prototype", "cpp-namespace")]
        return min(defs or syms, key=lambda s: s.def_line)

    def op_target(self, ns: str, op: str) -> Symbol | None:
        key = (ns, op)
        if key in self._op_memo:
            return self._op_memo[key]
        res = None
        regs = self._ops.get(key, [])
        # CUDA registrations first: csrc/cpu and csrc/rocm are alternatives
        fns = sorted(((p, fn) for p, fn, _ in regs if fn), key=lambda x: (x[0].startswith(ALT_BACKENDS), x[0]))
        for reg_path, fn in fns:
            name = fn.rsplit("::", 1)[-1]
            defs = [s for s in self.by_name.get(name, ()) if s.kind == "cpp-function"]
            if not defs:
                continue
            reg_dir = posixpath.dirname(reg_path)
            res = max(
                defs,
                key=lambda s: (
                    s.path.startswith(ALT_BACKENDS) == reg_path.startswith(ALT_BACKENDS),
                    len(posixpath.commonpath([reg_dir, posixpath.dirname(s.path)])) if s.path.startswith("csrc") else 0,
                    not s.path.endswith((".h", ".hpp", ".cuh")),
                    -s.def_line,
                ),
            )
            break
        self._op_memo[key] = res
        return res

    def refs(self, path: str, tokens, includes) -> list[Ref]:
        out = []
        own = self.file_names.get(path, {})
        for line, col, end, ident, member in tokens:
            sym = None
            if ident in own:
                if any(s.def_line == line for s in own[ident]):
                    continue  # a definition site
                sym = self.same_file(path, ident)
            elif not member:
                sym = self.tree_unique(ident, path)
            if sym is None or sym.kind == "cpp-namespace" or (sym.path == path and sym.def_line == line):
                continue
            out.append(Ref(line, col, end, sym.path, sym.def_line, sym.qualname))
        base = posixpath.dirname(path)
        for line, col, end, inc in includes:
            for cand in (posixpath.normpath(posixpath.join(base, inc)), posixpath.normpath(posixpath.join("csrc", inc))):
                if cand in self.paths:
                    out.append(Ref(line, col, end, cand, 1, ""))
                    break
        out.sort(key=lambda r: (r.line, r.col))
        return out

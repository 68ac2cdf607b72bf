"""Python symbols and reference candidates, from :mod:`ast` (no imports run).

Symbols
=======

* ``class`` (nested classes too: ``Outer.Inner``), ``function`` (module level
  and functions nested in functions: ``outer.inner``), ``method`` (a def in a
  class body, sync or async), ``property`` (``@property``,
  ``@cached_property``, ``@x.setter``/``getter``/``deleter``).
* ``variable``: names bound by ``=``/``:`` at module level and in a class
  body (tuple targets included), and **instance attributes**: the first
  ``self.x = …`` / ``self.x: T = …`` in ``__init__`` (or ``__post_init__``)
  becomes ``Class.x`` (tag ``instance``) unless the class body already
  declares ``x``.  Only ``__init__``/``__post_init__`` are searched, so an
  attribute first assigned elsewhere is not a symbol.
* Definitions inside module/class-level ``if``/``else``, ``try``/``except``/
  ``finally`` and ``with`` blocks are indexed like any other.
* ``start`` is the first decorator line, ``def_line`` the ``def``/``class``
  line, ``end`` the ``end_lineno`` of the statement.

Redefinitions and ordinals
==========================

Every definition of a qualname in a file is kept, in source order, numbered by
``Symbol.ordinal`` (0, 1, …): ``@typing.overload`` stubs (tag ``overload``),
property accessors (tags ``getter``/``setter``/``deleter``) and conditional or
repeated definitions.  Which one an anchor without a disambiguator means is
decided by :func:`vllm_book.index.preferred` (see its docstring and
``docs/anchors.md``): overload stubs are ignored when an implementation exists,
property accessors merge into one range, and anything still ambiguous is an
error that asks for ``#<ordinal>``.

Reference candidates
====================

:func:`parse` also returns, per file, unresolved reference *candidates*
(compact tuples, cheap to pickle) that :mod:`vllm_book.index.xref` resolves
once every file is known:

``("b", line, col, end_col, binding, attrs)``
    a name (``attrs == ()``) or the last attribute of ``name.a.b`` chain
    (``attrs == ("a", "b")``) whose head ``name`` is bound to *binding*.
``("op", line, col, end_col, namespace, opname)``
    ``torch.ops.<namespace>.<opname>`` → the C++ function registered for it.

Bindings are tuples: ``("sym", qualname)`` (a definition in this file),
``("mod", "pkg.mod")`` (``import pkg.mod [as x]``), ``("from", "pkg.mod",
"name")`` (``from pkg.mod import name``), ``("self", "Class")`` (the first
parameter of a method of ``Class``).  Columns are in str units (``ast`` gives
UTF-8 byte offsets; they are converted).
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from .model import Symbol

PROPERTY_DECORATORS = {"property", "cached_property", "abstractproperty", "functools.cached_property"}
ACCESSOR_ATTRS = {"setter": "setter", "getter": "getter", "deleter": "deleter"}
INIT_METHODS = ("__init__", "__post_init__")
TORCH_OPS_HEADS = {"torch"}


@dataclasses.dataclass(slots=True)
class PyFacts:
    """What xref needs from one Python file (picklable, no AST)."""

    module: str
    is_package: bool
    #: module-scope name -> binding (see module docstring)
    bindings: dict[str, tuple] = dataclasses.field(default_factory=dict)
    #: modules star-imported at module scope, absolute names
    star_imports: list[str] = dataclasses.field(default_factory=list)
    #: class qualname -> list of (binding, attrs) for each base expression
    bases: dict[str, list[tuple]] = dataclasses.field(default_factory=dict)
    #: reference candidates
    cands: list[tuple] = dataclasses.field(default_factory=list)
    #: ``from X import …`` / ``import X`` module tokens: (line, col, end, module)
    module_tokens: list[tuple] = dataclasses.field(default_factory=list)


def module_name(path: str) -> tuple[str, bool]:
    """``vllm/v1/core/__init__.py`` → ``("vllm.v1.core", True)``."""
    p = path[:-3] if path.endswith(".py") else path.rsplit(".", 1)[0]
    parts = p.split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def absolute_module(module: str, is_package: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if name:
        return f"{base}.{name}" if base else name
    return base


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _decorator_info(dec: ast.expr) -> tuple[str | None, str | None]:
    """(kind-override, tag) from one decorator."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = _dotted(target) or ""
    last = name.rsplit(".", 1)[-1]
    if last == "overload":
        return None, "overload"
    if name in PROPERTY_DECORATORS or last in ("cached_property", "property"):
        return "property", "getter"
    if isinstance(target, ast.Attribute) and target.attr in ACCESSOR_ATTRS and isinstance(target.value, ast.Name):
        return "property", ACCESSOR_ATTRS[target.attr]
    return None, None


class _Lines:
    """UTF-8 byte column → str column conversion."""

    def __init__(self, source: bytes) -> None:
        self.lines = source.split(b"\n")

    def col(self, line: int, bcol: int) -> int:
        try:
            raw = self.lines[line - 1]
        except IndexError:
            return bcol
        if raw.isascii():
            return bcol
        return len(raw[:bcol].decode("utf-8", "replace"))

    def text(self, line: int) -> str:
        try:
            return self.lines[line - 1].decode("utf-8", "replace")
        except IndexError:
            return ""


# --------------------------------------------------------------------------
# symbols


def _targets(node: ast.expr) -> list[ast.Name]:
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List)):
        out = []
        for elt in node.elts:
            out.extend(_targets(elt.value if isinstance(elt, ast.Starred) else elt))
        return out
    return []


_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _block_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    bodies = [stmt.body, stmt.orelse, stmt.finalbody]  # type: ignore[attr-defined]
    bodies += [h.body for h in stmt.handlers]  # type: ignore[attr-defined]
    return bodies


class _SymbolCollector:
    def __init__(self, path: str) -> None:
        self.path = path
        self.out: list[tuple] = []  # (qualname, kind, start, def_line, end, tags)

    def body(self, stmts: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for stmt in stmts:
            self.stmt(stmt, prefix, in_class)

    def stmt(self, stmt: ast.stmt, prefix: str, in_class: bool) -> None:
        if isinstance(stmt, ast.ClassDef):
            qual = prefix + stmt.name
            start = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
            self.out.append((qual, "class", start, stmt.lineno, stmt.end_lineno or stmt.lineno, ()))
            n_before = len(self.out)
            self.body(stmt.body, qual + ".", True)
            declared = {s[0] for s in self.out[n_before:]}
            for fn in stmt.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name in INIT_METHODS and fn.args.args:
                    self.instance_attrs(fn, qual, declared)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = prefix + stmt.name
            kind = "method" if in_class else "function"
            tags = []
            for dec in stmt.decorator_list:
                k, tag = _decorator_info(dec)
                if k and in_class:
                    kind = k
                if tag and (tag == "overload" or in_class):
                    tags.append(tag)
            start = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
            self.out.append((qual, kind, start, stmt.lineno, stmt.end_lineno or stmt.lineno, tuple(tags)))
            self.nested(stmt.body, qual + ".")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for name in _targets(t):
                    self.out.append((prefix + name.id, "variable", stmt.lineno, stmt.lineno, stmt.end_lineno or stmt.lineno, ()))
        elif isinstance(stmt, _BLOCKS):
            for body in _block_bodies(stmt):
                self.body(body, prefix, in_class)

    def nested(self, stmts: list[ast.stmt], prefix: str) -> None:
        """Functions and classes nested in a function body (any depth of blocks)."""
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.stmt(stmt, prefix, False)
            elif isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)) or (
                hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)
            ):
                for field in ("body", "orelse", "finalbody"):
                    self.nested(getattr(stmt, field, []) or [], prefix)
                for h in getattr(stmt, "handlers", []) or []:
                    self.nested(h.body, prefix)

    def instance_attrs(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: str, declared: set[str]) -> None:
        selfname = fn.args.args[0].arg
        stack: list[ast.stmt] = list(fn.body)
        found: list[tuple[int, ast.stmt, str]] = []
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
                    for e in elts:
                        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == selfname:
                            found.append((stmt.lineno, stmt, e.attr))
            for field in ("body", "orelse", "finalbody"):
                stack.extend(getattr(stmt, field, []) or [])
            for h in getattr(stmt, "handlers", []) or []:
                stack.extend(h.body)
        for _line, stmt, attr in sorted(found, key=lambda x: x[0]):
            qual = f"{cls}.{attr}"
            if qual in declared:
                continue
            declared.add(qual)
            self.out.append((qual, "variable", stmt.lineno, stmt.lineno, stmt.end_lineno or stmt.lineno, ("instance",)))


def symbols_from_tree(path: str, tree: ast.Module) -> list[Symbol]:
    col = _SymbolCollector(path)
    col.body(tree.body, "", False)
    # instance attributes were appended after their class body; restore
    # source order (ordinals follow source order).
    raw = sorted(col.out, key=lambda s: (s[3], s[2]))
    seen: dict[str, int] = {}
    out = []
    for qual, kind, start, def_line, end, tags in raw:
        n = seen.get(qual, 0)
        seen[qual] = n + 1
        out.append(Symbol(qual, kind, path, start, def_line, end, n, tags))  # type: ignore[arg-type]
    return out


# --------------------------------------------------------------------------
# references


class _Scope:
    __slots__ = ("kind", "names", "cls", "self_name")

    def __init__(self, kind: str, names: dict[str, tuple], cls: str = "", self_name: str = "") -> None:
        self.kind = kind  # "module" | "class" | "function"
        self.names = names
        self.cls = cls  # for functions that are methods: the class qualname
        self.self_name = self_name


def _bind(target: ast.AST, names: dict[str, tuple]) -> None:
    t = type(target)
    if t is ast.Name:
        names[target.id] = ("local",)  # type: ignore[attr-defined]
    elif t is ast.Tuple or t is ast.List:
        for elt in target.elts:  # type: ignore[attr-defined]
            _bind(elt, names)
    elif t is ast.Starred:
        _bind(target.value, names)  # type: ignore[attr-defined]


_FUNC_OR_CLASS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, facts: PyFacts, prefix: str) -> dict[str, tuple]:
    """Names bound in a function scope, from its statements (nested scopes skipped).

    Only statement-level bindings are collected (assignment/for/with targets,
    imports, defs, except/match names); a walrus inside an expression is not,
    which at worst links a shadowed module-level name.
    """
    names: dict[str, tuple] = {}
    a = fn.args
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
        if arg is not None:
            names[arg.arg] = ("local",)
    if isinstance(fn, ast.Lambda):
        return names
    globals_: set[str] = set()
    stack: list[ast.stmt] = list(fn.body)
    while stack:
        st = stack.pop()
        t = type(st)
        if t in _FUNC_OR_CLASS:
            names[st.name] = ("sym", prefix + st.name)  # type: ignore[attr-defined]
            continue
        if t is ast.Assign:
            for tg in st.targets:  # type: ignore[attr-defined]
                _bind(tg, names)
        elif t is ast.AugAssign or t is ast.AnnAssign or t is ast.For or t is ast.AsyncFor:
            _bind(st.target, names)  # type: ignore[attr-defined]
        elif t is ast.With or t is ast.AsyncWith:
            for item in st.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    _bind(item.optional_vars, names)
        elif t is ast.Delete:
            for tg in st.targets:  # type: ignore[attr-defined]
                _bind(tg, names)
        elif t is ast.Import:
            for al in st.names:  # type: ignore[attr-defined]
                if al.asname:
                    names[al.asname] = ("mod", al.name)
                else:
                    head = al.name.split(".", 1)[0]
                    names[head] = ("mod", head)
            continue
        elif t is ast.ImportFrom:
            mod = absolute_module(facts.module, facts.is_package, st.level, st.module)  # type: ignore[attr-defined]
            for al in st.names:  # type: ignore[attr-defined]
                if al.name != "*":
                    names[al.asname or al.name] = ("from", mod, al.name)
            continue
        elif t is ast.Global:
            globals_.update(st.names)  # type: ignore[attr-defined]
            continue
        elif t is ast.Match:
            for case in st.cases:  # type: ignore[attr-defined]
                for n in ast.walk(case.pattern):
                    if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                        names[n.name] = ("local",)
                stack.extend(case.body)
            continue
        body = getattr(st, "body", None)
        if body:
            stack.extend(body)
            stack.extend(getattr(st, "orelse", ()) or ())
            stack.extend(getattr(st, "finalbody", ()) or ())
            for h in getattr(st, "handlers", ()) or ():
                if h.name:
                    names[h.name] = ("local",)
                stack.extend(h.body)
    for g in globals_:
        names.pop(g, None)
    return names


def _module_bindings(tree: ast.Module, facts: PyFacts) -> dict[str, tuple]:
    names: dict[str, tuple] = {}
    defs: set[str] = set()

    def walk(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[stmt.name] = ("sym", stmt.name)
                defs.add(stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in _targets(t):
                        if n.id not in defs:
                            names[n.id] = ("sym", n.id)
            elif isinstance(stmt, ast.Import):
                for al in stmt.names:
                    if al.asname:
                        b = ("mod", al.name)
                        key = al.asname
                    else:
                        key = al.name.split(".", 1)[0]
                        b = ("mod", key)
                    if key not in defs:
                        names[key] = b
            elif isinstance(stmt, ast.ImportFrom):
                mod = absolute_module(facts.module, facts.is_package, stmt.level, stmt.module)
                for al in stmt.names:
                    if al.name == "*":
                        facts.star_imports.append(mod)
                    elif (al.asname or al.name) not in defs:
                        names[al.asname or al.name] = ("from", mod, al.name)
            elif isinstance(stmt, _BLOCKS):
                for body in _block_bodies(stmt):
                    walk(body)

    walk(tree.body)
    return names


class _RefCollector(ast.NodeVisitor):
    def __init__(self, facts: PyFacts, lines: _Lines) -> None:
        self.facts = facts
        self.lines = lines
        self.scopes: list[_Scope] = [_Scope("module", facts.bindings)]
        self.prefix: list[str] = []
        self._dispatch: dict[type, Any] = {}

    # a faster NodeVisitor: cached dispatch, no per-field generator
    def visit(self, node: ast.AST) -> None:
        cls = node.__class__
        method = self._dispatch.get(cls)
        if method is None:
            method = self._dispatch[cls] = getattr(self, "visit_" + cls.__name__, self.generic_visit)
        method(node)

    def generic_visit(self, node: ast.AST) -> None:
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Constant(self, node: ast.Constant) -> None:
        pass

    def visit_Load(self, node: ast.AST) -> None:
        pass

    visit_Store = visit_Del = visit_Load

    # -- helpers
    def lookup(self, name: str) -> tuple | None:
        innermost = True
        for scope in reversed(self.scopes):
            if scope.kind == "class" and not innermost:
                continue
            innermost = False
            b = scope.names.get(name)
            if b is not None:
                if scope.kind == "function" and scope.self_name and name == scope.self_name and b == ("local",):
                    return ("self", scope.cls)
                return b
        return None

    def emit(self, node_line: int, bcol: int, bend: int, *rest: Any) -> None:
        col = self.lines.col(node_line, bcol)
        end = self.lines.col(node_line, bend)
        self.facts.cands.append((rest[0], node_line, col, end, *rest[1:]))

    # -- scopes
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        qual = ".".join(self.prefix + [node.name])
        bases = []
        for b in node.bases:
            self.visit(b)
            chain = _chain(b)
            if chain:
                head, attrs = chain
                binding = self.lookup(head)
                if binding and binding[0] != "local":
                    bases.append((binding, attrs))
        for k in node.keywords:
            self.visit(k.value)
        if bases:
            self.facts.bases[qual] = bases
        names: dict[str, tuple] = {}
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[stmt.name] = ("sym", f"{qual}.{stmt.name}")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in _targets(t):
                        names[n.id] = ("sym", f"{qual}.{n.id}")
        self.scopes.append(_Scope("class", names, cls=qual))
        self.prefix.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.prefix.pop()
        self.scopes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        if node.returns:
            self.visit(node.returns)
        enclosing = self.scopes[-1]
        qual = ".".join(self.prefix + [node.name])
        names = _local_names(node, self.facts, qual + ".")
        cls = self_name = ""
        if enclosing.kind == "class":
            is_static = any(_dotted(d) == "staticmethod" for d in node.decorator_list)
            if not is_static:
                params = [*node.args.posonlyargs, *node.args.args]
                if params:
                    cls, self_name = enclosing.cls, params[0].arg
        self.scopes.append(_Scope("function", names, cls=cls, self_name=self_name))
        self.prefix.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.prefix.pop()
        self.scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        self.scopes.append(_Scope("function", _local_names(node, self.facts, "")))
        self.visit(node.body)
        self.scopes.pop()

    def visit_arguments(self, node: ast.arguments) -> None:
        # annotations and defaults are evaluated in the enclosing scope
        for a in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]:
            if a is not None and a.annotation is not None:
                self.visit(a.annotation)
        for d in [*node.defaults, *node.kw_defaults]:
            if d is not None:
                self.visit(d)

    def _comprehension(self, node: ast.AST) -> None:
        names: dict[str, tuple] = {}
        for gen in node.generators:  # type: ignore[attr-defined]
            for n in ast.walk(gen.target):
                if isinstance(n, ast.Name):
                    names[n.id] = ("local",)
        self.scopes.append(_Scope("function", names))
        self.generic_visit(node)
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # -- imports
    def visit_Import(self, node: ast.Import) -> None:
        for al in node.names:
            if getattr(al, "lineno", None) is None:
                continue
            self.facts.module_tokens.append(
                (al.lineno, self.lines.col(al.lineno, al.col_offset), self.lines.col(al.lineno, al.col_offset) + len(al.name), al.name)
            )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = absolute_module(self.facts.module, self.facts.is_package, node.level, node.module)
        text = self.lines.text(node.lineno)
        col = self.lines.col(node.lineno, node.col_offset)
        i = text.find("from", col)
        if i >= 0:
            j = i + 4
            while j < len(text) and text[j] in " \t":
                j += 1
            k = j
            while k < len(text) and (text[k].isalnum() or text[k] in "._"):
                k += 1
            if k > j:
                self.facts.module_tokens.append((node.lineno, j, k, mod))
        for al in node.names:
            if al.name == "*" or getattr(al, "lineno", None) is None:
                continue
            c = self.lines.col(al.lineno, al.col_offset)
            self.facts.cands.append(("b", al.lineno, c, c + len(al.name), ("from", mod, al.name), ()))

    # -- names
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        b = self.lookup(node.id)
        if b is None or b[0] in ("local", "self"):
            return
        self.emit(node.lineno, node.col_offset, node.end_col_offset or node.col_offset + len(node.id), "b", b, ())

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _chain(node)
        if chain is None:
            self.generic_visit(node)
            return
        head, attrs = chain
        # visit the head Name and emit one candidate per attribute token
        head_node = node
        nodes = []
        while isinstance(head_node, ast.Attribute):
            nodes.append(head_node)
            head_node = head_node.value
        self.visit(head_node)
        b = self.lookup(head)
        if b is None or b[0] == "local":
            return
        nodes.reverse()
        is_torch_ops = b == ("mod", "torch") and len(attrs) >= 3 and attrs[0] == "ops"
        for i, n in enumerate(nodes):
            if n.end_lineno != n.lineno and n.end_lineno is not None:
                line = n.end_lineno
            else:
                line = n.lineno
            bend = n.end_col_offset or 0
            end = self.lines.col(line, bend)
            start = end - len(n.attr)
            if start < 0:
                continue
            if is_torch_ops:
                if i == 2:
                    self.facts.cands.append(("op", line, start, end, attrs[1], attrs[2]))
                continue
            self.facts.cands.append(("b", line, start, end, b, attrs[: i + 1]))


def _chain(node: ast.AST) -> tuple[str, tuple[str, ...]] | None:
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, tuple(reversed(attrs))
    return None


# --------------------------------------------------------------------------


def parse_error(path: str, source: bytes) -> tuple[int, str]:
    """``(line, reason)`` when Python cannot parse *source*, else ``(0, "")``."""
    try:
        ast.parse(source, filename=path)
    except SyntaxError as exc:
        return exc.lineno or 1, f"Python cannot parse it: {exc.msg}"
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return 1, f"Python cannot parse it: {exc}"
    return 0, ""


def parse(path: str, source: bytes) -> tuple[list[Symbol], PyFacts | None]:
    """Symbols and xref facts of one Python file; (``[]``, ``None``) on a syntax error
    (:func:`parse_error` says why; the index records it, see ``SourceIndex.problems``)."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return [], None
    symbols = symbols_from_tree(path, tree)
    mod, is_pkg = module_name(path)
    facts = PyFacts(mod, is_pkg)
    facts.bindings = _module_bindings(tree, facts)
    lines = _Lines(source)
    collector = _RefCollector(facts, lines)
    for stmt in tree.body:
        collector.visit(stmt)
    return symbols, facts

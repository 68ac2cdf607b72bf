"""C/C++/CUDA symbols via Universal Ctags, op registrations, and token refs.

Symbols
=======

One ``ctags`` run over all C-family files of the tree (``.cu``/``.cuh`` are
mapped to the C++ parser with ``--langmap=C++:+.cu.cuh``; ``--fields=+neKSZ``
gives kinds, start and end lines, scopes).  Kept kinds: functions (methods
too), prototypes, classes, structs, unions, namespaces, macros, enums,
typedefs/``using`` aliases and namespace-scope variables.  Dropped: locals,
lambdas (``__anon…``), members of anonymous types, enumerators, class data
members.

* ``qualname`` is the ctags scope joined by ``.`` (``vllm::reshape_and_cache_kernel``
  → ``vllm.reshape_and_cache_kernel``); :meth:`SourceIndex.lookup` also finds a
  symbol by its bare name when that name is unique in the file.
* ``def_line`` is the ctags line (the line holding the name); ``start``
  extends upwards over a ``template <…>`` header, a return type or attributes
  written on the lines just above (stops at a blank, comment or preprocessor
  line, or a line ending in ``;``, ``{``, ``}`` or ``:``); ``end`` is ctags'
  ``end`` field (for prototypes: the line with the closing ``;``).
* A prototype is dropped when the same file defines that qualname.
* Repeated qualnames (overloads, template specialisations, ``#ifdef``
  alternatives) get ordinals in line order.

Op registrations
================

``TORCH_LIBRARY*``/``STABLE_TORCH_LIBRARY*`` blocks are scanned for
``x.def("name(...)", …)`` / ``x.impl("name", …, &fn)`` calls; the namespace is
the macro's first argument (``TORCH_EXTENSION_NAME`` is ``_rocm_C`` under
``csrc/rocm/``, ``_C`` elsewhere).  :func:`vllm_book.index.xref` uses them to
link ``torch.ops.<ns>.<name>`` in Python to the implementing C++ function.

Refs
====

A cheap token scan (comments and string literals blanked): every identifier
that names an in-tree definition links to it, preferring a definition in the
same file, else the unique (non-member) definition in the tree.  Identifiers
after ``.``/``->`` only link within the same file.  ``#include "x.h"`` links to
the included file (relative to the including file, then ``csrc/``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import defaultdict

from .model import Symbol

CTAGS_KINDS = {
    "function": "cpp-function",
    "prototype": "cpp-prototype",
    "class": "cpp-class",
    "struct": "cpp-struct",
    "union": "cpp-union",
    "namespace": "cpp-namespace",
    "macro": "cpp-macro",
    "enum": "cpp-enum",
    "typedef": "cpp-typedef",
    "variable": "cpp-variable",
}
EXTENSION_NAMES = {"csrc/rocm/": "_rocm_C"}
DEFAULT_EXTENSION_NAME = "_C"
_CTAGS_ARGS = [
    "--output-format=json",
    "--fields=+neKSZ",
    "--kinds-C++=+p",
    "--kinds-C=+p",
    "--langmap=C++:+.cu.cuh.inl",
    "--language-force=C++",
    "-f",
    "-",
]


class CtagsError(RuntimeError):
    pass


def ctags_binary() -> str:
    exe = shutil.which("ctags")
    if not exe:
        raise CtagsError("Universal Ctags not found: install it (Debian/Ubuntu: apt-get install universal-ctags)")
    return exe


def run_ctags(root: str, paths: list[str]) -> dict[str, list[dict]]:
    """Raw ctags tags per path (relative POSIX paths, run with cwd=root)."""
    out: dict[str, list[dict]] = defaultdict(list)
    if not paths:
        return out
    proc = subprocess.run(
        [ctags_binary(), *_CTAGS_ARGS, "-L", "-"],
        input="\n".join(paths) + "\n",
        cwd=root,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    if proc.returncode != 0:
        raise CtagsError(f"ctags failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        if tag.get("_type") == "tag":
            out[tag["path"]].append(tag)
    return out


_STOP_END = (";", "{", "}", ":")


def _extend_start(lines: list[str], line: int) -> int:
    start = line
    for _ in range(8):
        prev = start - 1
        if prev < 1:
            break
        text = lines[prev - 1].strip()
        if not text or text.startswith(("//", "/*", "*", "#")) or text.endswith(_STOP_END) or "*/" in text:
            break
        if text.endswith(")") and not text.startswith("template") and "__launch_bounds__" not in text and "(" not in text:
            # tail of a multi-line macro call or expression
            break
        start = prev
    return start


def _prototype_end(lines: list[str], line: int) -> int:
    for i in range(line, min(line + 40, len(lines)) + 1):
        if ";" in lines[i - 1] or "{" in lines[i - 1]:
            return i
    return line


def symbols_from_tags(path: str, tags: list[dict], text: str) -> list[Symbol]:
    lines = text.split("\n")
    raw = []
    for t in tags:
        kind = CTAGS_KINDS.get(t.get("kind", ""))
        if not kind:
            continue
        name = t.get("name", "")
        scope = t.get("scope", "")
        scope_kind = t.get("scopeKind", "")
        if not name or name.startswith("__anon") or "__anon" in scope:
            continue
        if kind == "cpp-function" and _MACRO_BLOCKS.match(name):
            continue
        if scope_kind in ("function", "prototype") or (kind == "cpp-variable" and scope_kind in ("class", "struct", "union")):
            continue
        line = int(t.get("line", 0) or 0)
        if line <= 0:
            continue
        end = int(t.get("end", 0) or 0)
        if kind == "cpp-prototype" and not end:
            end = _prototype_end(lines, line)
        end = max(end, line)
        start = line
        if kind in ("cpp-function", "cpp-prototype", "cpp-class", "cpp-struct", "cpp-union", "cpp-variable"):
            start = _extend_start(lines, line)
        qual = f"{scope.replace('::', '.')}.{name}" if scope else name
        tags_ = ("member",) if scope_kind in ("class", "struct", "union") else ()
        raw.append((qual, kind, start, line, end, tags_))
    defined = {r[0] for r in raw if r[1] != "cpp-prototype"}
    raw = [r for r in raw if not (r[1] == "cpp-prototype" and r[0] in defined)]
    raw.sort(key=lambda r: (r[3], r[2], r[0]))
    seen: dict[str, int] = {}
    out = []
    prev_key = None
    for qual, kind, start, line, end, tags_ in raw:
        key = (qual, line, kind)
        if key == prev_key:  # ctags occasionally reports one tag twice
            continue
        prev_key = key
        n = seen.get(qual, 0)
        seen[qual] = n + 1
        out.append(Symbol(qual, kind, path, start, line, end, n, tags_))  # type: ignore[arg-type]
    return out


# --------------------------------------------------------------------------
# comments/strings blanking and token scanning

_LEX = re.compile(
    r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|R"(?P<d>[^(\s]*)\(.*?\)(?P=d)\"""",
    re.S,
)


def blank_comments_and_strings(text: str) -> str:
    """Replace comments and string/char literals by spaces (newlines kept)."""

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        return re.sub(r"[^\n]", " ", s)

    return _LEX.sub(repl, text)


_IDENT = re.compile(r"[A-Za-z_]\w*")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
CPP_KEYWORDS = frozenset(
    """alignas alignof and asm auto bool break case catch char char16_t char32_t class const constexpr const_cast
    continue decltype default delete do double dynamic_cast else enum explicit export extern false float for friend
    goto if inline int long mutable namespace new noexcept not nullptr operator or private protected public register
    reinterpret_cast return short signed sizeof static static_assert static_cast struct switch template this throw
    true try typedef typeid typename union unsigned using virtual void volatile wchar_t while define include ifdef
    ifndef endif elif undef pragma once defined size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t
    uint64_t std torch at c10 min max""".split()
)


def token_candidates(text: str) -> list[tuple[int, int, int, str, bool]]:
    """(line, col, end_col, identifier, after_member_access) for every identifier."""
    blank = blank_comments_and_strings(text)
    out = []
    for lineno, line in enumerate(blank.split("\n"), 1):
        if not line or line.isspace():
            continue
        for m in _IDENT.finditer(line):
            ident = m.group(0)
            if ident in CPP_KEYWORDS:
                continue
            s = m.start()
            before = line[:s].rstrip()
            member = before.endswith(".") or before.endswith("->")
            out.append((lineno, s, m.end(), ident, member))
    return out


def include_candidates(text: str) -> list[tuple[int, int, int, str]]:
    out = []
    for m in _INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start(1)) + 1
        line_start = text.rfind("\n", 0, m.start(1)) + 1
        out.append((line, m.start(1) - line_start, m.end(1) - line_start, m.group(1)))
    return out


# --------------------------------------------------------------------------
# torch op registrations

_LIB_BLOCK = re.compile(r"\b(?:STABLE_)?TORCH_LIBRARY(?:_FRAGMENT|_IMPL|_EXPAND|_IMPL_EXPAND)?\s*\(")
#: ctags reads ``TORCH_LIBRARY(…) { … }`` blocks as function definitions
_MACRO_BLOCKS = re.compile(r"^(?:STABLE_)?TORCH_LIBRARY\w*$|^REGISTER_EXTENSION$")


def _first_arg(text: str, open_paren: int) -> str:
    depth = 0
    for i in range(open_paren, min(len(text), open_paren + 300)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i]
        elif c == "," and depth == 1:
            return text[open_paren + 1 : i]
    return ""
_OP_CALL = re.compile(r"\b\w+\s*\.\s*(def|impl)\s*\(\s*\"([A-Za-z_]\w*)")
_FN_REF = re.compile(r"&\s*((?:\w+::)*\w+)")


def _extension_name(path: str) -> str:
    for prefix, name in EXTENSION_NAMES.items():
        if path.startswith(prefix):
            return name
    return DEFAULT_EXTENSION_NAME


def _namespace(arg: str, path: str) -> str:
    arg = arg.strip()
    ext = _extension_name(path)
    m = re.fullmatch(r"CONCAT\s*\(\s*TORCH_EXTENSION_NAME\s*,\s*(\w+)\s*\)", arg)
    if m:
        return ext + m.group(1)
    if arg == "TORCH_EXTENSION_NAME":
        return ext
    return arg


def _call_extent(text: str, open_paren: int) -> int:
    depth = 0
    for i in range(open_paren, min(len(text), open_paren + 4000)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return open_paren


def op_registrations(path: str, text: str) -> list[tuple[str, str, str, int]]:
    """``[(namespace, op, cpp_function_or_"", line)]`` registered in one file."""
    if "TORCH_LIBRARY" not in text:
        return []
    blank = _blank_comments_only(text)
    blocks = [(m.start(), _namespace(_first_arg(blank, m.end() - 1), path)) for m in _LIB_BLOCK.finditer(blank)]
    if not blocks:
        return []
    out = []
    for m in _OP_CALL.finditer(blank):
        ns = ""
        for pos, name in blocks:
            if pos < m.start():
                ns = name
            else:
                break
        if not ns:
            continue
        paren = blank.index("(", m.start(1))
        end = _call_extent(blank, paren)
        body = blank[m.end(): end]
        fns = _FN_REF.findall(body)
        fn = fns[-1] if fns else ""
        line = blank.count("\n", 0, m.start(2)) + 1
        out.append((ns, m.group(2), fn, line))
    return out


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"", re.S)


def _blank_comments_only(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)

    return _COMMENTS.sub(repl, text)


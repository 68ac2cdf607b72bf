"""Unmanaged source lines: ``scheduler.py:123`` written by hand (no Sphinx imports).

A raw ``file.ext:N`` (or ``file.ext#LN``) reference to a source file silently
rots when the pin moves; chapters must use ``{src}`path::Symbol``` (or a
text-in-symbol line anchor) instead.  :func:`find_unmanaged` finds them in
any text; the Sphinx side applies it to paragraph text, inline literals and
code blocks (opt-out: the ``no-src-check`` class, see ``docs/anchors.md``).
"""

from __future__ import annotations

import re

SOURCE_EXTS = ("py", "pyi", "cu", "cuh", "cpp", "cc", "cxx", "c", "h", "hpp", "hh", "inl")

UNMANAGED = re.compile(
    r"(?<![\w.-])"
    r"(?P<file>(?:[\w.-]+/)*[\w-][\w.-]*\.(?:" + "|".join(SOURCE_EXTS) + r"))"
    r"(?::|#L)(?P<line>\d+)(?:[-–](?:L)?\d+)?(?!\w)"
)

#: class that switches the check off for an element and everything inside it
OPT_OUT_CLASS = "no-src-check"


def find_unmanaged(text: str) -> list[tuple[int, int, str]]:
    """``[(start, end, matched_text)]`` for each raw ``file.ext:N`` in *text*."""
    return [(m.start(), m.end(), m.group(0)) for m in UNMANAGED.finditer(text)]


_ROLE = re.compile(r"\{src\}`(?P<body>[^`]+)`")
_DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{src-code\}[ \t]+(?P<target>\S.*?)[ \t]*$", re.M)
_EXPLICIT = re.compile(r"^(.+?)\s*<(.*?)>$", re.S)


def find_anchors(text: str) -> list[tuple[int, str]]:
    """``[(lineno, target)]`` of every ``{src}`…``` role and ``{src-code}`` directive in MyST text.

    For tools that check anchors without a Sphinx build (``make validate``);
    the Sphinx domain itself does not use it.
    """
    out = []
    for m in _ROLE.finditer(text):
        body = m.group("body")
        ex = _EXPLICIT.match(body)
        out.append((text.count("\n", 0, m.start()) + 1, (ex.group(2) if ex else body).strip()))
    for m in _DIRECTIVE.finditer(text):
        out.append((text.count("\n", 0, m.start()) + 1, m.group("target").strip()))
    out.sort()
    return out

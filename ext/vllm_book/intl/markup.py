"""What a translation must carry over unchanged from its message: the MyST markup tokens (no Sphinx imports).

A message (``msgid``) is the MyST source of one paragraph, heading, list item or table cell.  A translator
rewrites the prose around its markup, but not the markup's targets:

``role``
    ``{src}`text <target>``` / ``{doc}`` / ``{ref}`` / ``{numref}`` / ``{download}`` / ``{impact}`` …: the role
    name and its *target* (the part in ``<…>``, or the whole content when there is no explicit text).  The
    link text is prose and may be translated.  ``{math}`` and other roles without a target keep their content.
``code``
    an inline code span: its content, verbatim — unless it has Chinese in it (```小结```, the name of a heading
    or label of the Chinese edition), which is prose the translator translates.
``math``
    ``$…$`` / ``$$…$$`` (MyST dollarmath): verbatim, except the words inside ``\\text{…}`` / ``\\mathrm{…}``,
    which are prose (:func:`math_shape`).
``subst``
    a MyST substitution ``{{ name }}``.
``link``
    the destination of a Markdown link ``[text](dest)``.

:func:`tokens` lists them with multiplicity; :func:`compare` says what a ``msgstr`` lost or changed.
"""

from __future__ import annotations

import re
from collections import Counter

ROLE = re.compile(r"\{([A-Za-z][\w:+-]*)\}(`+)(.+?)(?<!`)\2(?!`)", re.S)
#: roles whose content is "text <target>" or "target"; the rest keep their whole content
LINK_ROLES = {"src", "doc", "ref", "numref", "download", "term", "impact", "drill", "eq", "any", "py:class",
              "py:func", "py:mod", "py:meth", "py:attr", "std:ref", "std:doc", "external"}
CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?![\s$])(.+?)(?<![\s\\])\$(?!\d)", re.S)
SUBST = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")
LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
EXPLICIT = re.compile(r"^(.*?)\s*<([^<>]+)>\s*$", re.S)


TEXT_COMMANDS = re.compile(r"\\(text|textrm|textit|textbf|mathrm|operatorname)\{[^{}]*\}")


def math_shape(latex: str) -> str:
    """A formula with the words of its ``\\text{…}`` (and ``\\mathrm{…}``) left out: the part a translation keeps.
    ``$\\text{已算} - s$`` and ``$\\text{computed} - s$`` have the same shape."""
    return TEXT_COMMANDS.sub(lambda m: f"\\{m.group(1)}{{…}}", latex.strip())


_LINK_ROLE_NAMES = frozenset(r.split(":")[-1] for r in LINK_ROLES)


def _is_link_role(name: str) -> bool:
    return name.split(":")[-1] in _LINK_ROLE_NAMES


def role_target(name: str, content: str) -> str:
    if not _is_link_role(name):
        return content
    m = EXPLICIT.match(content)
    return m.group(2).strip() if m else content.strip()


def role_text(name: str, content: str) -> str | None:
    """The explicit link text of a link role (prose the translator writes), or None."""
    if not _is_link_role(name):
        return None
    m = EXPLICIT.match(content)
    return m.group(1) if m and m.group(1).strip() else None


def _without(pattern: re.Pattern, text: str) -> str:
    return pattern.sub(" ", text)


def tokens(text: str) -> Counter:
    """Every markup token of *text*, as ``(kind, value)`` with its count."""
    out: Counter = Counter()
    for m in ROLE.finditer(text):
        out[("role", f"{{{m.group(1)}}}{role_target(m.group(1), m.group(3))}")] += 1
    rest = _without(ROLE, text)
    for m in SUBST.finditer(rest):
        out[("subst", m.group(1))] += 1
    rest = _without(SUBST, rest)
    for m in CODE.finditer(rest):
        if not CJK.search(m.group(2)):  # `小结`: the name of a Chinese heading is prose, translated with it
            out[("code", m.group(2))] += 1
    rest = _without(CODE, rest)
    for m in MATH.finditer(rest):
        out[("math", math_shape(m.group(1) or m.group(2)))] += 1
    rest = _without(MATH, rest)
    for m in LINK.finditer(rest):
        out[("link", m.group(1))] += 1
    return out


KIND_NAMES = {"role": "role target", "code": "inline code", "math": "math", "subst": "substitution",
              "link": "link destination"}


def compare(msgid: str, msgstr: str) -> list[str]:
    """What *msgstr* lost or changed of *msgid*'s markup, as sentences (empty: all carried over)."""
    want, got = tokens(msgid), tokens(msgstr)
    lost = want - got
    extra = got - want
    out = []
    for (kind, value), n in sorted(lost.items()):
        changed = [v for (k, v) in extra if k == kind]
        name = KIND_NAMES[kind]
        times = f" ({n}×)" if n > 1 else ""
        if changed and kind == "role":
            out.append(f"{name} {value!r}{times} is changed (the translation has {', '.join(map(repr, changed))})")
        else:
            out.append(f"{name} {value!r}{times} is missing from the translation")
    for (kind, value), _n in sorted(extra.items()):
        if kind == "role" and any(k == "role" for (k, _v) in lost):
            continue  # reported as "changed" above
        if kind in ("role", "subst", "link"):
            out.append(f"{KIND_NAMES[kind]} {value!r} is in the translation but not in the message")
    return out


def prose(text: str) -> str:
    """The words a reader reads in *text*: link text kept, targets, code, math and URLs dropped."""
    def keep_text(m: re.Match) -> str:
        t = role_text(m.group(1), m.group(3))
        return f" {t} " if t else " "
    s = ROLE.sub(keep_text, text)
    s = SUBST.sub(" ", s)
    s = CODE.sub(" ", s)
    s = MATH.sub(" ", s)  # formulas, with their \\text{} labels (often abbreviations: arr, head), are not prose
    s = re.sub(r"\\[A-Za-z]+", " ", s)  # LaTeX commands of a display formula's message are not words
    s = re.sub(r"\]\([^)]*\)", "] ", s)
    s = re.sub(r"https?://\S+", " ", s)
    s = re.sub(r"\{[.#][^{}]*\}", " ", s)  # MyST attributes: {.no-cmd-check}, {#id}
    s = re.sub(r"<[^>]+>", " ", s)
    return s

"""Chinese for rinohtype: line-break opportunities, the zh_CN language, the character set.

rinohtype breaks lines only at spaces, tabs, ``/`` and U+200B (ZERO WIDTH
SPACE).  :func:`insert_breaks` puts a U+200B between characters where Chinese
typesetting allows a break — next to a CJK character, except before closing
punctuation (行首禁则: ，。、；：？！）》」…) and after opening punctuation
(行尾禁则: （《「“…) — in running text only: never in code, literals, raw
content or titles (titles feed the PDF outline and running headers).  It runs
on the rinoh builder's assembled document only, so HTML/EPUB never see it;
rinohtype writes no glyph for U+200B, so text copied from the PDF (and
``pdftotext``) has none.

:func:`insert_literal_breaks` does the same for long inline literals (an
identifier such as ``VllmConfig._is_default_v2_model_runner_model`` is one
"word" to rinohtype and would run into the margin) and the ``path:start–end``
of source anchors: a U+200B after ``. _ : = , - /`` (not before a file
extension) and before ``(``, in runs longer than ``LITERAL_RUN`` characters
between spaces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from docutils import nodes

from .rinoh_patches import is_cjk

ZWSP = "\u200b"

#: 行首禁则 — never at the start of a line
NO_BREAK_BEFORE = set(
    "，。、；：？！）》」』】〕〉〗〙〛”’…—–％‰·ー々〻ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ・"
    "｝］｠〞,.;:?!)]}%\u3001\u3002\uff0c\uff0e\uff1a\uff1b\uff1f\uff01\uff09"
)
#: 行尾禁则 — never at the end of a line
NO_BREAK_AFTER = set("（《「『【〔〈〖〘〚“‘｛［｟〝([{¥$£#@")

#: elements whose text is never touched
SKIP = (nodes.literal, nodes.literal_block, nodes.raw, nodes.math, nodes.math_block, nodes.doctest_block,
        nodes.title, nodes.subtitle, nodes.rubric, nodes.comment, nodes.target, nodes.option_string,
        nodes.system_message)


def break_allowed(a: str, b: str) -> bool:
    """May a line break fall between characters *a* and *b*?"""
    if a.isspace() or b.isspace() or a == ZWSP or b == ZWSP:
        return False
    if not (is_cjk(a) or is_cjk(b)):
        return False
    return b not in NO_BREAK_BEFORE and a not in NO_BREAK_AFTER


def _skipped(node: nodes.Node, stop: nodes.Node) -> bool:
    p = node.parent
    while p is not None and p is not stop.parent:
        if isinstance(p, SKIP) or (isinstance(p, nodes.Element) and "pre" in p.get("classes", ())):
            return True
        p = p.parent
    return False


def _blocks(doctree: nodes.Node) -> Iterator[nodes.TextElement]:
    for node in doctree.findall(nodes.TextElement):
        if isinstance(node, SKIP):
            continue
        parent = node.parent
        # only the outermost text element (inline elements are TextElements too)
        if isinstance(parent, nodes.TextElement):
            continue
        yield node


def _with_breaks(text: str) -> str:
    out = []
    prev = ""
    for ch in text:
        if prev and break_allowed(prev, ch):
            out.append(ZWSP)
        out.append(ch)
        prev = ch
    return "".join(out)


def insert_breaks(doctree: nodes.Node) -> int:
    """Insert U+200B break opportunities in running text; returns how many."""
    count = 0
    for block in _blocks(doctree):
        if _skipped(block, block):
            continue
        texts = [t for t in block.findall(nodes.Text)]
        if not texts:
            continue
        skipped = [_skipped(t, block) for t in texts]
        new_texts: list[str] = [str(t) for t in texts]
        for i, t in enumerate(texts):
            if skipped[i]:
                continue
            s = new_texts[i]
            if any(is_cjk(c) for c in s):
                updated = _with_breaks(s)
                count += len(updated) - len(s)
                new_texts[i] = updated
        # boundaries between consecutive text nodes (e.g. 调度器 + `Scheduler` + 的)
        for i in range(len(texts) - 1):
            a, b = str(texts[i]), str(texts[i + 1])
            if not a or not b or not break_allowed(a[-1], b[0]):
                continue
            if not skipped[i]:
                new_texts[i] += ZWSP
            elif not skipped[i + 1]:
                new_texts[i + 1] = ZWSP + new_texts[i + 1]
            else:
                continue
            count += 1
        for t, s, sk in zip(texts, new_texts, skipped):
            if not sk and s != str(t):
                t.parent.replace(t, nodes.Text(s))
    return count


#: a run (between spaces) of an inline literal or source location longer than this gets break opportunities
LITERAL_RUN = 20
_BREAK_AFTER_IN_LITERAL = set("._:=,-/")
_BREAK_BEFORE_IN_LITERAL = set("(")


def _short_extension(text: str, i: int) -> bool:
    """Is ``text[i]`` the dot of a file extension (``.py`` before ``:``, ``)`` or the end)?"""
    j = i + 1
    while j < len(text) and text[j].isalnum():
        j += 1
    return 0 < j - i - 1 <= 4 and (j == len(text) or text[j] in ":)]")


def _break_after(run: str, i: int) -> bool:
    ch = run[i]
    nxt = run[i + 1] if i + 1 < len(run) else ""
    if not nxt or nxt == ZWSP or len(run) - i - 1 <= 2:  # never leave one or two characters alone
        return False
    if ch == "/":
        return nxt != "/"
    if nxt in _BREAK_AFTER_IN_LITERAL:
        return False
    if ch == ".":
        return not _short_extension(run, i)
    if ch in "_-":  # not inside leading underscores/dashes (__init__, _C, --max-num-seqs)
        k = i
        while k > 0 and run[k - 1] == ch:
            k -= 1
        return k > 0 and run[k - 1] not in "/._:"
    return True


def _literal_with_breaks(text: str) -> str:
    out: list[str] = []
    for run in re.split(r"(\s+)", text):
        if len(run) <= LITERAL_RUN or run.isspace():
            out.append(run)
            continue
        for i, ch in enumerate(run):
            if ch in _BREAK_BEFORE_IN_LITERAL and i and out and out[-1] != ZWSP:
                out.append(ZWSP)
            out.append(ch)
            if ch in _BREAK_AFTER_IN_LITERAL and _break_after(run, i):
                out.append(ZWSP)
    return "".join(out)


def _breakable(node: nodes.Node) -> bool:
    if isinstance(node, nodes.literal):
        return not isinstance(node.parent, (nodes.literal_block, nodes.title, nodes.subtitle))
    # the path:start–end of a source anchor (vllm_book.anchors, non-HTML builders)
    return isinstance(node, nodes.reference) and "src-ref-location" in node.get("classes", ())


def insert_literal_breaks(doctree: nodes.Node) -> int:
    """Break opportunities in long inline literals and source locations (not in code blocks,
    not in titles); returns how many."""
    count = 0
    for node in list(doctree.findall(_breakable)):
        for t in list(node.findall(nodes.Text)):
            s = str(t)
            if len(s) <= LITERAL_RUN:
                continue
            updated = _literal_with_breaks(s)
            if updated != s:
                count += len(updated) - len(s)
                t.parent.replace(t, nodes.Text(updated))
    return count


def text_chars(doctree: nodes.Node, extra: Iterable[str] = ()) -> set[str]:
    """Every character of the document (and of *extra* strings): the font subset."""
    chars: set[str] = set()
    for t in doctree.findall(nodes.Text):
        chars.update(str(t))
    for node in doctree.findall(nodes.Element):
        for key in ("alt", "title", "reftitle"):
            value = node.get(key)
            if isinstance(value, str):
                chars.update(value)
    for s in extra:
        chars.update(str(s))
    return chars


# -- the zh_CN language of rinohtype -------------------------------------------------------------

_LANGUAGES: list = []  # rinohtype keeps weak references only


def register_language(code: str, admonition_labels: dict[str, str]) -> None:
    """(Re)define rinohtype's *code* language with Chinese labels.

    Admonition titles come from Sphinx's own translations (the same 备注/警告
    the HTML and EPUB show).
    """
    from rinoh.language import Language

    strings = dict(
        paragraph="段落", section="节", chapter="章", figure="图", table="表", listing="代码清单",
        equation="公式", contents="目录", list_of_figures="插图目录", list_of_tables="表格目录", index="索引",
        attention="注意", caution="小心", danger="危险", error="错误", hint="提示", important="重要",
        note="备注", tip="小技巧", warning="警告", seealso="参见",
    )
    strings.update({k: v for k, v in admonition_labels.items() if k in strings and v})
    lang = Language(code.lower(), "简体中文", **strings)
    lang.no_break_after = []
    _LANGUAGES[:] = [x for x in _LANGUAGES if x.code != lang.code] + [lang]

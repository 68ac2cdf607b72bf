"""The readability lint of ``make validate``: prose, not Python.

A reader test found chapters accurate but hard to follow where the prose is made of code: line anchors whose
link text is the quoted code sitting inside Chinese sentences, dense runs of source links, and half the prose
in code font.  This module measures, per written chapter, from the same line scan as the rest of the gate
(:mod:`.mdscan`):

``zh``
    Chinese characters (CJK ideographs) of the prose: paragraphs, lists, tables, headings, admonitions and
    dropdowns, not code blocks, diagrams or excerpts.
``links_per_k``
    ``{src}`` roles per 1,000 of those characters (``src-code`` excerpts are not links).
``code_share``
    the share of the prose's visible characters (whitespace and Markdown markup left out; table rows are not
    prose: a table cell is where the guide puts code names) set in code font:
    inline code spans, and ``{src}`` roles shown as code — a role without explicit text shows its qualname,
    path or quoted line; a role whose explicit text has no Chinese character shows it as code too
    (:class:`vllm_book.anchors.domain` renders Chinese link text in the body font).
``code_text_lines``
    line anchors (``path::Sym:"text"`` / ``path:"text"``) without explicit text, in a sentence that has
    Chinese in it, outside table rows: the quoted code becomes a word of a Chinese sentence.  Each is a
    *warning* with its line and the fix.

Limits by the chapter's kind (``kind`` of the part or the chapter in ``curriculum.toml``):

=============  ===========  ==========
kind           links/1,000  code font
=============  ===========  ==========
concept        10           35 %
walkthrough    25           35 %
=============  ===========  ==========

Above a limit is an error (``check = "readability"``); a page with fewer than ``MIN_ZH`` (1,000) Chinese
characters is measured but not held to the rates, which say little on a few sentences.  A chapter listed in
``source/_data/readability-baseline.toml`` (written before the lint, awaiting its revision) is held to its
recorded figures instead — it may not get worse, nor gain code-text line anchors — so the gate stays green while
the revision is pending, and the list can only shrink: a listed chapter that now passes the real limits with no
code-text line anchor is an error until its entry is removed.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

from .common import Problem, rel
from .mdscan import Page

KINDS = ("concept", "walkthrough")
#: (links per 1,000 Chinese characters, share of prose in code font)
LIMITS: dict[str, tuple[float, float]] = {"concept": (10.0, 0.35), "walkthrough": (25.0, 0.35)}
BASELINE_FILE = "source/_data/readability-baseline.toml"
#: below this many Chinese characters a rate per 1,000 says little (a fixture page, a stub): reported, not enforced
MIN_ZH = 1000

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_MARKUP = re.compile(r"[\s*_|#>`~]|^\s*(?:[-+]|\d+\.)\s")
_SPACE = re.compile(r"\s")
_SENTENCE_END = re.compile(r"[。！？；]")
_ROLE_OR_CODE = re.compile(r"\{[\w:.+-]+\}(`+).*?\1|(`+).*?\2")
_EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


@dataclasses.dataclass
class Figures:
    docname: str
    kind: str
    chars: int  # characters of the .md file
    zh: int
    links: int
    prose_chars: int
    code_chars: int
    code_text_lines: list[int] = dataclasses.field(default_factory=list)

    @property
    def links_per_k(self) -> float:
        return 1000.0 * self.links / self.zh if self.zh else 0.0

    @property
    def code_share(self) -> float:
        total = self.prose_chars + self.code_chars
        return self.code_chars / total if total else 0.0

    def row(self) -> dict[str, object]:
        return {"docname": self.docname, "kind": self.kind, "chars": self.chars, "zh": self.zh, "links": self.links,
                "links_per_k": round(self.links_per_k, 1), "code_share": round(self.code_share, 3),
                "code_text_lines": len(self.code_text_lines)}


def _visible(text: str, code: bool = False) -> int:
    """Characters a reader sees: whitespace left out, and in prose the Markdown markup too."""
    return len(_SPACE.sub("", text)) if code else len(_MARKUP.sub("", text))


def _role_body(raw: str) -> str:
    i = raw.index("`")
    return raw[i:].strip("`")


def shown_as_code(raw: str, target: str) -> str:
    """The text a ``{src}`` role shows in code font ('' when it shows Chinese link text)."""
    m = _EXPLICIT.match(_role_body(raw).strip())
    if m and m.group("title"):
        title = m.group("title")
        return "" if _CJK.search(title) else title
    if ':"' in target:  # a line anchor shows its quoted text
        return target.split(':"', 1)[1].rstrip('"')
    if "::" in target:
        return target.split("::", 1)[1].split("#", 1)[0]
    return target


def is_code_text_line_anchor(raw: str, target: str) -> bool:
    m = _EXPLICIT.match(_role_body(raw).strip())
    return ':"' in target and not (m and m.group("title"))


def _in_chinese_sentence(line: str, raw: str) -> bool:
    if line.lstrip().startswith("|"):  # a table cell
        return False
    pos = line.find(raw)
    if pos < 0:
        return bool(_CJK.search(_ROLE_OR_CODE.sub("", line)))
    starts = [m.end() for m in _SENTENCE_END.finditer(line, 0, pos)]
    start = starts[-1] if starts else 0
    m = _SENTENCE_END.search(line, pos + len(raw))
    end = m.start() if m else len(line)
    sentence = line[start:pos] + line[pos + len(raw):end]
    return bool(_CJK.search(_ROLE_OR_CODE.sub("", sentence)))


def measure(page: Page, kind: str) -> Figures:
    text = page.path.read_text(encoding="utf-8")
    lines = text.splitlines()
    zh = prose = code = 0
    table_rows = {n for n, line in enumerate(lines, start=1) if line.lstrip().startswith("|")}
    for s in page.spans:
        if not s.code:
            zh += len(_CJK.findall(s.text))
        if s.line in table_rows:  # a table cell is where code names belong: not prose
            continue
        if s.code:
            code += _visible(s.text, code=True)
        else:
            prose += _visible(s.text)
    roles = [a for a in page.anchors if a.form == "role"]
    code_text: list[int] = []
    for a in roles:
        shown = shown_as_code(a.raw, a.target)
        title = "" if shown else _EXPLICIT.match(_role_body(a.raw).strip()).group("title")  # type: ignore[union-attr]
        zh += len(_CJK.findall(title))
        if a.line in table_rows:
            continue
        if shown:
            code += _visible(shown, code=True)
        else:
            prose += _visible(title)
        line = lines[a.line - 1] if 0 < a.line <= len(lines) else ""
        if is_code_text_line_anchor(a.raw, a.target) and _in_chinese_sentence(line, a.raw):
            code_text.append(a.line)
    return Figures(page.docname, kind, len(text), zh, len(roles), prose, code, code_text)


def load_baseline(root: Path) -> tuple[dict[str, dict], list[Problem]]:
    """The baseline's entries by docname, each with ``_line``: the line of its ``docname = …`` key."""
    path = root / BASELINE_FILE
    if not path.is_file():
        return {}, []
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return {}, [Problem(BASELINE_FILE, 1, f"not valid TOML: {exc}", "fix the syntax", "readability")]
    lines = {line.strip(): n for n, line in enumerate(text.splitlines(), start=1)}
    return {c["docname"]: {**c, "_line": lines.get(f'docname = "{c["docname"]}"', 1)}
            for c in data.get("chapter", []) if "docname" in c}, []


def check(root: Path, pages: list[Page], kinds: dict[str, str]) -> tuple[list[Problem], list[Problem], list[Figures]]:
    """(errors, warnings, figures) for the written chapters in *kinds* (docname → kind)."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    figures: list[Figures] = []
    baseline, errors = load_baseline(root)
    for page in pages:
        kind = kinds.get(page.docname)
        if kind is None:
            continue
        f = measure(page, kind)
        figures.append(f)
        file = rel(root, page.path)
        for line in f.code_text_lines:
            warnings.append(Problem(file, line, "a line anchor's quoted code is a word of a Chinese sentence",
                                    "give it Chinese link text ({src}`这一行 <path::Sym:\"text\">`), or move it "
                                    "to a table cell or a src-code :emphasize:", "readability"))
        max_links, max_code = LIMITS[kind]
        if f.zh < MIN_ZH:
            continue
        over = f.links_per_k > max_links or f.code_share > max_code
        base = baseline.pop(page.docname, None)
        if base is not None:
            bl = base["_line"]
            if not over and not f.code_text_lines:
                errors.append(Problem(BASELINE_FILE, bl, f"{page.docname} now meets the {kind} limits "
                                      f"({f.links_per_k:.1f} links/1,000, code {f.code_share:.0%}, no code-text "
                                      "line anchors)", "remove its entry from the baseline", "readability"))
                continue
            worse = []
            if len(f.code_text_lines) > int(base.get("code_text_lines", 0)):
                worse.append(f"{len(f.code_text_lines)} line anchors with code as link text > recorded "
                             f"{base.get('code_text_lines')}")
            if f.links_per_k > float(base.get("links_per_k", 0)) + 0.05:
                worse.append(f"links/1,000 {f.links_per_k:.1f} > recorded {base.get('links_per_k')}")
            if f.code_share > float(base.get("code_share", 0)) + 0.0005:
                worse.append(f"code font {f.code_share:.1%} > recorded {float(base.get('code_share', 0)):.1%}")
            if worse:
                errors.append(Problem(file, 1, f"readability got worse while awaiting its revision: {'; '.join(worse)}",
                                      "revise the new text (Chinese link text, fewer inline links) or the chapter",
                                      "readability"))
            continue
        if f.links_per_k > max_links:
            errors.append(Problem(file, 1, f"{f.links} source links in {f.zh} Chinese characters = "
                                  f"{f.links_per_k:.1f} per 1,000; a {kind} chapter allows {max_links:g}",
                                  "cut inline links to what a reader will click: one link per idea; move lists of "
                                  "lines into a src-code excerpt with :emphasize: or a table", "readability"))
        if f.code_share > max_code:
            errors.append(Problem(file, 1, f"{f.code_share:.0%} of the prose is in code font; a {kind} chapter "
                                  f"allows {max_code:.0%}", "name things in Chinese and link them with Chinese text; "
                                  "keep code font for names the reader types or greps", "readability"))
    for docname, entry in baseline.items():
        errors.append(Problem(BASELINE_FILE, entry["_line"], f"{docname} is in the baseline but is not "
                              "a written chapter", "remove its entry", "readability"))
    return errors, warnings, figures


def table(figures: list[Figures]) -> str:
    """The per-chapter report (``python -m vllm_book.sync readability``)."""
    head = f"{'chapter':58} {'kind':11} {'chars':>6} {'zh':>6} {'links':>5} {'/1k':>5} {'code':>5} {'codetext':>8}"
    out = [head, "-" * len(head)]
    for f in figures:
        out.append(f"{f.docname:58} {f.kind:11} {f.chars:6d} {f.zh:6d} {f.links:5d} {f.links_per_k:5.1f} "
                   f"{f.code_share:5.0%} {len(f.code_text_lines):8d}")
    return "\n".join(out)

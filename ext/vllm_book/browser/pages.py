"""HTML of the source browser's pages (no Sphinx imports; runs in workers).

Three kinds of page share one small template (``templates/page.html``,
:class:`string.Template`): a file page (:func:`render_file_job`, run in the
worker processes), a directory page and the landing page
(:func:`render_dir_page`).  Every page links one shared CSS and one shared JS
file under ``<prefix>/_static/`` and loads nothing else.

Line numbers are not in the HTML: ``b.js`` draws the gutter and resolves
``#L120`` / ``#L120-L140`` by line height.  Per-line elements with ids would
cost about 0.45 MB of gzip per 100k lines (3.7 MB for the tree) — more than
the whole highlighting.  Symbols *do* get an element at their first line
(decorators included) — ``<a id=Scheduler.schedule data-e=180></a>``, the
last line in ``data-e`` when it differs — so ``#Scheduler.schedule`` works
even without JS, and the script widens it to the symbol's range.
"""

from __future__ import annotations


import dataclasses
import hashlib
import re
import string
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from ..index.model import Symbol
from .highlight import attr, esc, lex_cached, lexer_name, render_line

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

#: bump to force every page to be re-rendered (also keyed on the sources below)
PAGE_VERSION = 1


def _digest_sources() -> str:
    h = hashlib.sha256(f"page-v{PAGE_VERSION}".encode())
    for p in sorted([*TEMPLATES.iterdir(), *STATIC.iterdir(), HERE / "highlight.py", HERE / "pages.py"]):
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


#: changes whenever a template, a static file or the rendering code changes
TEMPLATE_DIGEST = _digest_sources()

_TEMPLATE: string.Template | None = None


def template() -> string.Template:
    global _TEMPLATE
    if _TEMPLATE is None:
        _TEMPLATE = string.Template((TEMPLATES / "page.html").read_text(encoding="utf-8"))
    return _TEMPLATE


# --------------------------------------------------------------------------
# small helpers


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


LANG_LABEL = {"python": "Python", "cpp": "C/C++", "cuda": "CUDA", "c": "C", "text": "文本"}

#: symbol kinds shown in the outline (variables, typedefs, macros, prototypes are not)
OUTLINE_KINDS = frozenset(
    {"class", "function", "method", "property", "cpp-function", "cpp-class", "cpp-struct", "cpp-namespace", "cpp-enum", "cpp-union"}
)
#: one-letter kind codes (outline CSS classes and the search index)
KIND_CODE = {
    "class": "c", "function": "f", "method": "m", "property": "p", "variable": "v",
    "cpp-function": "F", "cpp-class": "C", "cpp-struct": "S", "cpp-namespace": "N", "cpp-macro": "M",
    "cpp-enum": "E", "cpp-typedef": "T", "cpp-prototype": "P", "cpp-variable": "V", "cpp-union": "U",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """One addressable definition on a file page."""

    id: str  # the element id / URL fragment
    qualname: str
    kind: str
    start: int
    end: int
    symbol: Symbol


def symbol_targets(symbols: Sequence[Symbol]) -> list[Target]:
    """The ids of a file's symbols.

    The definition an anchor without ordinal means (:func:`vllm_book.index.preferred`;
    ordinal 0 when that is ambiguous) gets the bare qualname, with the
    preferred range (a property's range spans all its accessors); every other
    definition gets ``<qualname>~<ordinal>``.
    """
    from ..index import preferred

    groups: dict[str, list[Symbol]] = defaultdict(list)
    for s in symbols:
        groups[s.qualname].append(s)
    out: list[Target] = []
    for qual, group in groups.items():
        group.sort(key=lambda s: s.ordinal)
        choice = preferred(group) if len(group) > 1 else None
        primary = choice.symbol if choice else group[0]
        start, end = (choice.start, choice.end) if choice else (primary.start, primary.end)
        out.append(Target(qual, qual, primary.kind, start, max(end, start), primary))
        for s in group:
            if s is not primary:
                out.append(Target(f"{qual}~{s.ordinal}", qual, s.kind, s.start, max(s.end, s.start), s))
    out.sort(key=lambda t: (t.symbol.start, t.symbol.def_line, t.id))
    return out


_PLAIN_FRAGMENT = re.compile(r"[A-Za-z0-9_.~:-]*")


def fragment(s: str) -> str:
    """A URL fragment for an id (percent-encoding what is not plain)."""
    if _PLAIN_FRAGMENT.fullmatch(s):
        return s
    from urllib.parse import quote

    return quote(s, safe="._~-:")


def outline_html(targets: Sequence[Target]) -> str:
    items = [t for t in targets if t.kind in OUTLINE_KINDS]
    if not items:
        return ""
    present = {t.qualname for t in items}
    children: dict[str, list[Target]] = defaultdict(list)
    for t in items:
        parent = t.qualname
        while "." in parent:
            parent = parent.rsplit(".", 1)[0]
            if parent in present:
                break
        else:
            parent = ""
        children[parent].append(t)

    def walk(key: str, depth: int) -> str:
        parts = ["<ul>"]
        for t in children.get(key, ()):
            name = t.qualname.rsplit(".", 1)[-1] if key else t.qualname
            if t.id != t.qualname:
                name += f" #{t.symbol.ordinal}"
            sub = walk(t.qualname, depth + 1) if t.id == t.qualname and t.qualname in children and depth < 8 else ""
            parts.append(
                f"<li class={KIND_CODE.get(t.kind, 'x')}><a href={attr('#' + fragment(t.id))}>{esc(name)}</a>{sub}</li>"
            )
        parts.append("</ul>")
        return "".join(parts)

    return walk("", 0)


def page(**kw: str) -> str:
    return template().substitute(kw)


# --------------------------------------------------------------------------
# file pages (worker side)


@dataclasses.dataclass(slots=True)
class FileJob:
    """Everything a worker needs to render one file page (picklable)."""

    path: str  # tree-relative
    src: str  # absolute path of the source file
    out: str  # absolute path of the page
    lang: str
    sha256: str
    symbols: list[Symbol]
    #: (line, col, end_col, href attribute value) sorted by (line, col)
    refs: list[tuple[int, int, int, str]]
    #: line → marker HTML (citation margin markers)
    markers: dict[int, str]
    #: template fields shared with the head (title, css, js, home, crumbs, …)
    head: dict[str, str]
    cites_html: str
    #: the newest impact report's word on this file ("" = unchanged or no report)
    drift_html: str
    gh: str
    gh_label: str
    size: int
    key: str


def render_file(job: FileJob, cache_dir: str | None) -> tuple[str, bool]:
    """(HTML, lexed) of one file page."""
    data = Path(job.src).read_bytes()
    lexer = lexer_name(job.path, job.lang)
    # every indexed file is text by its name; a NUL byte or bad UTF-8 in it is reported by both gates
    # (SourceIndex.problems) and shown here as U+FFFD, never as "binary, 0 lines" beside a chapter's citation
    # key the cache on what was read, should the file have changed since it was indexed
    sha = hashlib.sha256(data).hexdigest()
    lines, lexed = lex_cached(data.decode("utf-8", "replace"), lexer, sha, cache_dir)
    targets = symbol_targets(job.symbols)
    prefix: dict[int, list[str]] = defaultdict(list)
    for t in targets:
        end = f" data-e={t.end}" if t.end > t.start else ""
        prefix[t.start].append(f"<a id={attr(t.id)}{end}></a>")
    for line, html in job.markers.items():
        prefix[line].append(html)
    refs_by_line: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for line, col, end, href in job.refs:
        refs_by_line[line].append((col, end, href))
    n = len(lines)
    out = []
    for i, runs in enumerate(lines, 1):
        pre = prefix.get(i)
        body = render_line(runs, refs_by_line.get(i))
        out.append("".join(pre) + body if pre else body)
    # markers/anchors beyond the end (an index that disagrees about the line count)
    for line in sorted(k for k in prefix if k > n or k < 1):
        if out:
            out[-1] += "".join(prefix[line])
    code = "\n".join(out)
    # the newline after <pre> is eaten by the HTML parser; this one keeps line 1 intact
    body_code = f"<div class=src><pre class=code id=code>\n{code}\n</pre></div>"
    info = f"{LANG_LABEL.get(lexer, lexer)} · {n:,} 行 · {human_size(job.size)}"
    outline = outline_html(targets)
    gh = f"<a class=gh id=gh href={attr(job.gh)}>{esc(job.gh_label)}</a>" if job.gh else ""
    body = (
        f"<div class={'wrap' if outline else 'wrap1'}>"
        + (f"<aside class=side><nav class=ol><h2>大纲</h2>{outline}</nav></aside>" if outline else "")
        + f"<main><div class=meta><span>{esc(info)}</span>{gh}</div>{job.drift_html}{job.cites_html}{body_code}</main></div>"
    )
    html = page(**job.head, kind="file", n=str(n), body=body)
    return html, lexed


def write_page(path: Path, data: bytes) -> None:
    """Write a page in place (no temp file: creating files is the slow part here).

    Not atomic; safe because the manifest never lists a page as current
    while it is being rewritten (it is saved without them first).
    """
    try:
        f = open(path, "wb")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "wb")
    with f:
        f.write(data)


def render_file_job(job: FileJob, cache_dir: str | None) -> tuple[str, str, int, bool]:
    """Render and write one page: (path, key, bytes written, lexed)."""
    html, lexed = render_file(job, cache_dir)
    data = html.encode("utf-8")
    write_page(Path(job.out), data)
    return job.path, job.key, len(data), lexed


def render_chunk(jobs: list[FileJob], cache_dir: str | None) -> list[tuple[str, str, int, bool] | tuple[str, str, int, str]]:
    """Worker entry: render several pages; a failure is reported, not raised."""
    results = []
    for job in jobs:
        try:
            results.append(render_file_job(job, cache_dir))
        except Exception as exc:  # noqa: BLE001 - reported by the main process
            results.append((job.path, job.key, -1, f"{type(exc).__name__}: {exc}"))
    return results

"""源码索引: the appendix of the EPUB and PDF listing every cited source location.

Inline anchors themselves are rendered by :mod:`vllm_book.anchors` for these
builders (text, ``path:start–end``, a link to the online source browser at
``vllm_book_online_base``); ``src-code`` excerpts appear inline as captioned,
highlighted blocks.  This module adds the index: one entry per cited file,
and under it every cited symbol (or file-level line range) with its lines, a
link to the online browser and the chapters citing it, each linking to the
citation.  Data: :func:`vllm_book.anchors.get_citations`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docutils import nodes
from sphinx.application import Sphinx

from .. import urls

if TYPE_CHECKING:
    from sphinx.environment import BuildEnvironment

TITLES = {"zh": "源码索引", "en": "Source index"}
INTRO = {
    "zh": "本书引用过的每一处 vLLM 源码：文件、符号与行号（锁定版本），以及引用它的章节。行号链接到在线版的源码浏览器。",
    "en": "Every vLLM source location the book cites: file, symbol and lines (pinned release), and the chapters "
          "citing it. Line numbers link to the online source browser.",
}
WHOLE_FILE = {"zh": "（整个文件）", "en": "(whole file)"}
WHOLE_DIR = {"zh": "（整个目录）", "en": "(whole directory)"}


def _whole(path: str, lang: str) -> str:
    return (WHOLE_DIR if path.endswith("/") else WHOLE_FILE)[lang]
TIMES = {"zh": "（{n} 处）", "en": " ({n}×)"}


@dataclass
class Cite:
    docname: str
    node_id: str
    title: str


@dataclass
class SymbolEntry:
    qualname: str
    kind: str
    start: int
    end: int
    cites: list[Cite] = field(default_factory=list)

    @property
    def lines(self) -> str:
        if self.kind in ("dir", "file") or not self.start:
            return ""
        return f"{self.start}" if self.start == self.end else f"{self.start}–{self.end}"


@dataclass
class FileEntry:
    path: str
    symbols: list[SymbolEntry] = field(default_factory=list)


def _lang(config) -> str:
    return "zh" if (config.language or "zh").startswith("zh") else "en"


def entries(env: BuildEnvironment) -> list[FileEntry]:
    """Cited files in path order, their symbols in line order."""
    try:
        from ..anchors import get_citations
    except ImportError:  # the anchors feature is not loaded
        return []
    if "src" not in env.domains:
        return []
    files: dict[str, FileEntry] = {}
    for (path, qualname), cites in get_citations(env).items():
        if not cites:
            continue
        first = cites[0]
        entry = files.setdefault(path, FileEntry(path))
        kind = first.kind if qualname else ("dir" if path.endswith("/") else "file")
        start = min(c.start for c in cites) if qualname else 0
        end = max(c.end for c in cites) if qualname else 0
        sym = SymbolEntry(qualname, kind, start, end)
        seen: dict[str, Cite] = {}
        for c in cites:
            if c.docname not in seen:
                seen[c.docname] = Cite(c.docname, c.node_id, c.title)
        sym.cites = list(seen.values())
        sym.count = len(cites)  # type: ignore[attr-defined]
        entry.symbols.append(sym)
    for entry in files.values():
        entry.symbols.sort(key=lambda s: (s.start, s.qualname))
    return [files[p] for p in sorted(files)]


def online_url(config, path: str, start: int = 0, end: int = 0) -> str:
    prefix = config.vllm_book_browser_prefix.strip("/")
    base = config.vllm_book_online_base.rstrip("/") + "/"
    if path.endswith("/"):
        return base + urls.dir_page(prefix, path)
    url = base + urls.file_page(prefix, path)
    return url + ("#" + urls.line_fragment(start, end) if start else "")


# -- PDF: docutils nodes appended to the assembled book ---------------------------------------


def append_to_pdf(builder, tree: nodes.document, counts: dict) -> None:
    data = entries(builder.env)
    if not data:
        return
    from .rinoh_builder import labels, next_appendix_label

    config = builder.config
    lang = _lang(config)
    title = f"{next_appendix_label(config, counts)}{labels(config)['sep']}{TITLES[lang]}"
    section = nodes.section("", nodes.title(title, title), ids=["vllm-book-source-index"],
                            classes=["book-appendix", "source-index"])
    section += nodes.paragraph(INTRO[lang], INTRO[lang])
    chapter_labels = counts.get("labels", {})
    for f in data:
        head = nodes.paragraph("", "", classes=["source-index-file"])
        head += nodes.reference("", "", nodes.literal(f.path, f.path), refuri=online_url(config, f.path),
                                classes=["source-index-path"])
        section += head
        items = nodes.bullet_list(classes=["source-index-symbols"])
        for sym in f.symbols:
            para = nodes.paragraph()
            if sym.qualname:
                para += nodes.literal(sym.qualname, sym.qualname)
                para += nodes.Text(" ")
                para += nodes.reference(sym.lines, sym.lines, refuri=online_url(config, f.path, sym.start, sym.end))
            else:
                para += nodes.Text(_whole(f.path, lang))
            para += nodes.Text("：" if lang == "zh" else ": ")
            for i, c in enumerate(sym.cites):
                if i:
                    para += nodes.Text("；" if lang == "zh" else "; ")
                # a chapter by its label alone (第 17 章: the TOC names it), other pages by title;
                # with full titles most entries took two lines and the appendix ~84 pages
                text = chapter_labels.get(c.docname, "") or c.title
                para += nodes.reference(text, text, refuri=f"%{c.docname}#{c.node_id}", internal=True)
            n = getattr(sym, "count", len(sym.cites))
            if n > 1:
                para += nodes.Text(TIMES[lang].format(n=n))
            items += nodes.list_item("", para)
        section += items
    tree += section


# -- EPUB: an extra page at the end of the spine ---------------------------------------------


PAGE_NAME = "vllm-book-source-index"


def epub_page(builder) -> tuple[str, dict] | None:
    data = entries(builder.env)
    if not data:
        return None
    config = builder.config
    lang = _lang(config)
    e = html.escape
    out = [f'<section class="source-index" id="vllm-book-source-index"><h1>{e(TITLES[lang])}</h1>',
           f"<p>{e(INTRO[lang])}</p>"]
    for f in data:
        out.append(f'<h2 class="source-index-file"><a href="{e(online_url(config, f.path))}">'
                   f'<code class="docutils literal notranslate">{e(f.path)}</code></a></h2><ul>')
        for sym in f.symbols:
            if sym.qualname:
                head = (f'<code class="docutils literal notranslate">{e(sym.qualname)}</code> '
                        f'<a href="{e(online_url(config, f.path, sym.start, sym.end))}">{e(sym.lines)}</a>')
            else:
                head = e(_whole(f.path, lang))
            cites = ("；" if lang == "zh" else "; ").join(
                f'<a href="{e(c.docname + builder.out_suffix)}#{e(c.node_id)}">{e(c.title)}</a>' for c in sym.cites)
            n = getattr(sym, "count", len(sym.cites))
            more = e(TIMES[lang].format(n=n)) if n > 1 else ""
            out.append(f"<li><p>{head}{'：' if lang == 'zh' else ': '}{cites}{more}</p></li>")
        out.append("</ul>")
    out.append("</section>")
    return TITLES[lang], {"title": TITLES[lang], "body": "\n".join(out)}


def setup(app: Sphinx) -> None:
    pass

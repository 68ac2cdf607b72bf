"""The EPUB edition: Sphinx's ``epub`` builder, made epubcheck-clean and Chinese.

:class:`BookEpubBuilder` (registered under the name ``epub``) adds:

* a **cover** (an SVG drawn here: title, subtitle, the pinned vLLM version and
  commit from :func:`vllm_book.pin.load_pin`) used as ``epub_cover`` unless
  ``conf.py`` sets one;
* ``lang``/``xml:lang`` on every page (readers pick CJK fonts by it);
* the 源码索引 appendix page (:mod:`.source_index`) at the end of the spine
  and the navigation;
* no JavaScript assets (the HTML edition's Mermaid bundle, ``*.js``/``*.mjs``/
  ``*.map``): EPUB readers do not run them and epubcheck flags them;
* ``properties="mathml"`` in ``content.opf`` for pages holding MathML;
* ``vllm-book-epub.css`` (chapter card, admonitions, figures, code).

Post-transforms for the ``epub`` builder only: math → MathML (``latex2mathml``;
sphinx.ext.mathjax's output needs JavaScript), decorative inline SVG icons of
sphinx-design removed (undeclared inline SVG fails epubcheck).  Diagrams are
PNGs (:mod:`.mermaid_offline`); source anchors come from :mod:`vllm_book.anchors`.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.builders.epub3 import Epub3Builder
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.matching import Matcher
from sphinx.util.osutil import copyfile

from . import STATIC, source_index

logger = logging.getLogger(__name__)

COVER = "_static/vllm-book-cover.svg"
CSS = "vllm-book-epub.css"
NO_JS = ["**/*.js", "**/*.mjs", "**/*.map", "**/*.js.map"]


def _lang_tag(config) -> str:
    return (config.epub_language or config.language or "en").replace("_", "-")


def cover_svg(title: str, subtitle: str, version: str, commit: str, author: str) -> str:
    e = html.escape
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="1200" height="1600" viewBox="0 0 1200 1600">
  <title>{e(title)}</title>
  <rect x="0" y="0" width="1200" height="1600" fill="#f4f7fb"/>
  <rect x="0" y="0" width="1200" height="520" fill="#1f4e79"/>
  <rect x="96" y="560" width="8" height="300" fill="#4a7fb0"/>
  <text x="96" y="330" font-family="Noto Sans CJK SC, Source Han Sans SC, PingFang SC, sans-serif" font-size="112" font-weight="bold" fill="#ffffff">{e(title)}</text>
  <text x="96" y="440" font-family="Noto Sans CJK SC, Source Han Sans SC, PingFang SC, sans-serif" font-size="48" fill="#dbe7f3">{e(subtitle)}</text>
  <text x="136" y="640" font-family="Noto Sans CJK SC, sans-serif" font-size="40" fill="#1b1b1b">vLLM v{e(version)}</text>
  <text x="136" y="720" font-family="Noto Sans Mono CJK SC, DejaVu Sans Mono, monospace" font-size="30" fill="#33414e">commit {e(commit[:20])}</text>
  <text x="136" y="770" font-family="Noto Sans Mono CJK SC, DejaVu Sans Mono, monospace" font-size="30" fill="#33414e">{e(commit[20:])}</text>
  <text x="96" y="1480" font-family="Noto Sans CJK SC, sans-serif" font-size="40" fill="#33414e">{e(author)}</text>
</svg>
"""


class BookEpubBuilder(Epub3Builder):
    """Sphinx's EPUB 3 builder with the book's cover, appendix and clean-up."""

    name = "epub"

    def init(self) -> None:
        super().init()
        tag = html.escape(_lang_tag(self.config))
        self.html_tag = (f'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" '
                         f'lang="{tag}" xml:lang="{tag}">')

    def init_css_files(self) -> None:
        super().init_css_files()
        self.add_css_file(CSS, priority=900)

    # -- static files -----------------------------------------------------------------------

    def copy_html_static_files(self, context: dict[str, Any]) -> None:
        from sphinx.util.fileutil import copy_asset

        excluded = Matcher([*self.config.exclude_patterns, "**/.*", *NO_JS])
        for entry in self.config.html_static_path:
            copy_asset(self.confdir / entry, self._static_dir, excluded=excluded, context=context,
                       renderer=self.templates, force=True)

    def copy_static_files(self) -> None:
        super().copy_static_files()
        copyfile(STATIC / CSS, self._static_dir / CSS, force=True)
        for path in Path(self._static_dir).rglob("*"):
            if path.is_file() and (path.suffix in (".js", ".mjs", ".map")):
                path.unlink()  # theme/extension scripts: never referenced by EPUB pages
        if not self.config.epub_cover:
            from ..pin import load_pin
            from .rinoh_builder import labels

            pin = load_pin(Path(self.config.vllm_book_repo_root) if self.config.vllm_book_repo_root else None)
            svg = cover_svg(self.config.epub_title or self.config.project,
                            labels(self.config)["subtitle"].format(version=pin.version),
                            pin.version, pin.commit, self.config.epub_author or self.config.author)
            (self.outdir / COVER).write_text(svg, encoding="utf-8")

    # -- extra pages --------------------------------------------------------------------------

    def gen_additional_pages(self) -> None:
        super().gen_additional_pages()
        page = source_index.epub_page(self)
        if page is not None:
            self._source_index_title, ctx = page
            self.handle_page(source_index.PAGE_NAME, ctx, "page.html")

    def toc_add_files(self, refnodes: list[dict[str, Any]]) -> None:
        super().toc_add_files(refnodes)  # used for the spine (get_toc) and for nav.xhtml
        title = getattr(self, "_source_index_title", None)
        if title:
            refnodes.append({"level": 1, "refuri": source_index.PAGE_NAME + self.out_suffix,
                             "text": html.escape(title)})

    def build_content(self) -> None:
        # leftovers of the previous build in the same outdir: Sphinx would list the old cover
        # page in the spine twice (it is regenerated below) and warn about .buildinfo.bak
        for stale in (self.coverpage_name, ".buildinfo.bak"):
            (self.outdir / stale).unlink(missing_ok=True)
        own_cover = not self.config.epub_cover
        if own_cover:
            self.config.epub_cover = (COVER, "epub-cover.html")  # restored below; never pickled
        try:
            super().build_content()
        finally:
            if own_cover:
                self.config.epub_cover = ()
        self._declare_properties()

    def build_toc(self) -> None:
        # Sphinx counts navPoints from init(): a second build with the same builder
        # (sphinx-autobuild, tests) would start toc.ncx at playOrder n+1
        self.playorder = 0
        self.tocid = 0
        super().build_toc()

    def _declare_properties(self) -> None:
        """content.opf: ``properties="mathml"`` on pages with MathML; ``cover-image`` on our cover."""
        opf = self.outdir / "content.opf"
        text = opf.read_text(encoding="utf-8")

        def fix(m: re.Match) -> str:
            item = m.group(0)
            href = html.unescape(re.search(r'href="([^"]+)"', item).group(1))
            props = []
            if href.endswith(self.out_suffix):
                try:
                    if "<math" in (self.outdir / href).read_text(encoding="utf-8"):
                        props.append("mathml")
                except OSError:
                    pass
            elif href == COVER:
                props.append("cover-image")
            if not props or "properties=" in item:
                return item
            return item.replace("<item ", f'<item properties="{" ".join(props)}" ', 1)

        new = re.sub(r"<item [^>]*/>", fix, text)
        if new != text:
            opf.write_text(new, encoding="utf-8")


# -- post-transforms (epub only) ------------------------------------------------------------


_STRAY_AMP = re.compile(r"&(?!#?[A-Za-z0-9]+;)")


def to_mathml(latex: str, block: bool) -> str:
    """LaTeX → MathML as an EPUB page can hold it.

    latex2mathml (2.x) has no ``aligned`` environment: it emits the alignment ``&`` as a bare ``<mi>&</mi>``, which
    is not XML (epubcheck: RSC-016).  ``aligned`` is rewritten to ``split``, which it lays out as the same
    two-column table; any ``&`` left unescaped is escaped, so a page never becomes unparsable."""
    from latex2mathml.converter import convert

    latex = latex.replace(r"\begin{aligned}", r"\begin{split}").replace(r"\end{aligned}", r"\end{split}")
    return _STRAY_AMP.sub("&amp;", convert(latex, display="block" if block else "inline"))


class EpubMath(SphinxPostTransform):
    """math / math_block → MathML (EPUB 3 readers render it; MathJax needs JavaScript)."""

    builders = ("epub",)
    default_priority = 400

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
            block = isinstance(node, nodes.math_block)
            latex = node.astext()
            try:
                mathml = to_mathml(latex, block)
            except Exception as exc:  # noqa: BLE001 - keep the LaTeX visible, say where
                logger.warning(f"cannot convert math to MathML ({exc}): {latex!r}", location=node,
                               type="vllm_book", subtype="epub")
                code = nodes.literal(latex, latex)
                node.replace_self(nodes.paragraph("", "", code) if block else code)
                continue
            raw = nodes.raw(latex, mathml, format="html")
            if block:
                container = nodes.container("", raw, classes=["math-block"])
                container["ids"] = list(node.get("ids", []))
                node.replace_self(container)
            else:
                node.replace_self(raw)


class EpubStripIcons(SphinxPostTransform):
    """Drop sphinx-design's decorative inline SVG icons (undeclared inline SVG fails epubcheck)."""

    builders = ("epub",)
    default_priority = 250  # after sphinx-design's HTML transforms (199)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(nodes.raw)):
            if "html" in node.get("format", "").split() and "<svg" in node.astext():
                node.parent.remove(node)


def setup(app: Sphinx) -> None:
    app.add_post_transform(EpubMath)
    app.add_post_transform(EpubStripIcons)

"""EPUB and PDF editions: builders, diagrams, fonts and Chinese typesetting.

``make epub`` and ``make pdf`` use Sphinx's ``epub`` builder and rinohtype's
``rinoh`` builder; this feature replaces both with subclasses of the same name
(registered at ``config-inited``, i.e. only when the builder is in use) and
adds what the HTML edition does not need:

=====================  ==========================================================
:mod:`.mermaid_offline` Mermaid diagrams → cached images (PNG for EPUB, vector
                        PDF for rinoh), one mermaid-cli browser session per build
:mod:`.source_index`    source anchors as ``path:start–end`` + online link, the
                        源码索引 appendix
:mod:`.epub`            EPUB builder: title page with the pinned commit, Chinese
                        metadata, no JavaScript/Mermaid assets, epubcheck-clean
:mod:`.rinoh_builder`   PDF builder: book structure (parts, 第 N 章), fonts,
                        reference cache, warnings
:mod:`.downloads`       ``{download}`` files: shipped in HTML, linked to the online copy in EPUB/PDF
:mod:`.svg_images`      SVG images (the experiments' figures) → vector PDF for rinoh (cairosvg)
:mod:`.rinoh_cjk`       U+200B line-break opportunities, the zh_CN language
:mod:`.fonts`           Noto CJK extracted from Debian's collections, subset, cached
:mod:`.rinoh_patches`   every rinohtype-internal change (rinohtype 0.5.6 only)
:mod:`.bench`           ``python -m vllm_book.formats.bench``: timings and sizes
=====================  ==========================================================

The rinoh document is configured through ``rinoh_documents`` (defaulted here
when ``conf.py`` does not set it) → ``templates/book.rtt`` → ``templates/book.rts``.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
RTT = TEMPLATES / "book.rtt"


def _register_builders(app: Sphinx, config: Config) -> None:
    from . import epub

    app.add_builder(epub.BookEpubBuilder, override=True)
    if "rinoh" in app.registry.builders:  # rinohtype's builder was preloaded: `-b rinoh`
        from . import rinoh_builder

        app.add_builder(rinoh_builder.BookRinohBuilder, override=True)
        if not getattr(config, "rinoh_documents", None):
            config.rinoh_documents = [rinoh_builder.default_document(config)]


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    from . import downloads, epub, mermaid_offline, source_index, svg_images

    downloads.setup(app)
    mermaid_offline.setup(app)
    svg_images.setup(app)
    source_index.setup(app)
    epub.setup(app)
    app.connect("config-inited", _register_builders, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

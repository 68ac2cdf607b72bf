"""The English edition: translation coverage per page, the banner and status page, the switch between editions.

- :mod:`.po`, :mod:`.markup`, :mod:`.spelling` — the catalogs as data (no Sphinx): read with line numbers,
  markup a translation must keep, the English word check; the catalog gate of ``make validate``
  (:mod:`vllm_book.sync.catalogs`) is built on them.
- :mod:`.coverage` — counts each page's translated messages while reading; the banner of an incomplete page;
  ``{translation-status}``.
- :mod:`.editions` — where each edition lives; the language switch of the HTML pages.
- :mod:`.diagrams` — Mermaid diagrams as messages (Sphinx's ``translatable`` node protocol).
- :mod:`.literals` — code blocks that hold Chinese (text timelines, comments) as messages; the cells of
  ``{table}`` directives get the location Sphinx needs to treat them as messages.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

from . import coverage, diagrams, editions, literals

TEMPLATES = Path(__file__).parent / "templates"


def _templates(app: Sphinx, config: Config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.append(str(TEMPLATES))


#: translator formats the placeholders are skipped in, should one survive to writing (they are replaced at
#: doctree-resolved).  Formats only: a builder *name* here ("epub") would make Sphinx look up that builder's
#: handlers under its name and ignore every other extension's "html" handlers for it.
FORMATS = ("html", "latex", "text", "man", "texinfo")


def setup(app: Sphinx) -> dict[str, object]:
    app.add_node(coverage.translation_banner, **{f: (coverage.visit_skip, None) for f in FORMATS})
    app.add_node(coverage.translation_status, **{f: (coverage.visit_skip, None) for f in FORMATS})
    app.add_node(diagrams.translatable_diagram,
                 **{f: (diagrams.visit_wrapper, diagrams.depart_wrapper) for f in FORMATS})
    app.add_transform(diagrams.WrapDiagrams)
    app.add_transform(literals.MarkChineseLiterals)
    app.add_transform(literals.LocateTableCells)
    app.add_post_transform(diagrams.UnwrapDiagrams)
    app.add_transform(coverage.CountMessages)
    app.add_directive("translation-status", coverage.TranslationStatus)
    app.connect("config-inited", _templates)
    app.connect("env-before-read-docs", coverage.note_read)
    app.connect("env-get-updated", coverage.updated)
    app.connect("env-purge-doc", coverage.purge)
    app.connect("env-merge-info", coverage.merge)
    app.connect("doctree-resolved", coverage.resolve)
    app.connect("html-page-context", editions.page_context)
    app.connect("build-finished", coverage.write_report)
    # env_version: the per-page coverage record changed shape; an older pickled environment is read anew
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}

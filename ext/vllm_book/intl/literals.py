"""Code blocks with Chinese in them (a text timeline, a comment in a console session) are messages too.

Sphinx leaves literal blocks out of the catalogs unless ``gettext_additional_targets`` names them, and then it
takes every code block of the book.  :class:`MarkChineseLiterals` (priority 9, before Sphinx's
``ExtraTranslatableNodes`` at 10) marks only the blocks a translation has something to do in: those whose text
has Chinese characters.  Their translations are applied by :mod:`.coverage` directly, as for display formulas:
Sphinx 9's Locale would re-parse them as reST (``::``), which MyST does not read.  Source excerpts
(``src-code``) are made later from the pinned tree and are never messages.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms import SphinxTransform

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


class MarkChineseLiterals(SphinxTransform):
    default_priority = 9

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(nodes.literal_block):
            if "translatable" not in node and CJK.search(node.astext()):
                node["translatable"] = True


class LocateTableCells(SphinxTransform):
    """Give the cells of a ``{table}`` directive's Markdown table a location, so they are messages.

    MyST parses the table inside a ``{table}`` directive without setting ``source`` on the cells' paragraphs,
    and Sphinx takes a text node without a source for a built-in string that is never translated: those cells
    stayed Chinese in a translated edition (plain Markdown tables are not affected).  Priority 8: before
    Sphinx's i18n transforms (10, 20) and the coverage count (19).
    """

    default_priority = 8

    def apply(self, **kwargs) -> None:
        source = self.document.get("source")
        for table in self.document.findall(nodes.table):
            if not (table.source or next(iter(table.findall(nodes.title)), None) is not None):
                continue  # a table our own directives build (landmarks, status): they choose their messages
            line = table.line or next((a.line for a in _ancestors(table) if getattr(a, "line", None)), None)
            for node in table.findall(nodes.TextElement):
                if not node.source and isinstance(node, (nodes.paragraph, nodes.title, nodes.caption)):
                    node.source, node.line = source, node.line or line


def _ancestors(node: nodes.Node):
    p = node.parent
    while p is not None:
        yield p
        p = p.parent

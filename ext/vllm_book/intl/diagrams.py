"""Mermaid diagrams are messages too: a translated edition draws them with translated labels.

sphinxcontrib-mermaid keeps a diagram's source in ``node["code"]`` of a non-text node, which Sphinx's i18n
machinery never extracts.  :class:`WrapDiagrams` (priority 5, before ``PreserveTranslatableMessages`` at 10
and ``Locale`` at 20) wraps each diagram in a :class:`translatable_diagram`, a node of Sphinx's
``addnodes.translatable`` protocol: ``make gettext`` extracts the whole diagram source as one message, and
``Locale`` hands the translation back to :meth:`~translatable_diagram.apply_translated_message`, which puts
it into the diagram.  :class:`UnwrapDiagrams` (a post-transform at priority 1, before the EPUB/PDF diagram
rendering at 3) removes the wrappers for every builder except gettext, which still needs them to extract.

The catalog gate parses every translated diagram with the pinned Mermaid (``vllm_book.sync.catalogs``), so a
translation that breaks the diagram's syntax fails ``make validate`` instead of drawing nothing in a browser.
"""

from __future__ import annotations

from collections.abc import Sequence

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinxcontrib.mermaid import mermaid


def is_diagram(node: nodes.Node) -> bool:
    return isinstance(node, mermaid) and "code" in node


class translatable_diagram(nodes.General, nodes.Element, addnodes.translatable):
    """Wraps one ``mermaid`` node; its message is the diagram source."""

    def _diagram(self) -> nodes.Element | None:
        return next((c for c in self.children if is_diagram(c)), None)

    def preserve_original_messages(self) -> None:
        d = self._diagram()
        if d is not None and "original_code" not in self:
            self["original_code"] = d["code"]

    def apply_translated_message(self, original_message: str, translated_message: str) -> None:
        d = self._diagram()
        if d is not None and original_message == self.get("original_code", d["code"]):
            d["code"] = translated_message
            self["translated"] = True

    def extract_original_messages(self) -> Sequence[str]:
        d = self._diagram()
        code = self.get("original_code", d["code"] if d is not None else "")
        return [code] if code.strip() else []


class WrapDiagrams(SphinxTransform):
    default_priority = 5

    def apply(self, **kwargs) -> None:
        for node in list(self.document.findall(is_diagram)):
            if isinstance(node.parent, translatable_diagram):
                continue
            wrapper = translatable_diagram()
            # a captioned diagram sits in a figure and may carry no location of its own
            holder = next((n for n in (node, node.parent) if n is not None and n.source), None)
            wrapper.source = holder.source if holder is not None else self.document.get("source")
            wrapper.line = (holder.line if holder is not None else None) or node.line or 0
            node.replace_self(wrapper)
            wrapper += node


class UnwrapDiagrams(SphinxPostTransform):
    default_priority = 1  # before vllm_book.formats.mermaid_offline (3) draws the diagrams for EPUB/PDF

    def run(self, **kwargs) -> None:
        if self.app.builder.name == "gettext":
            return
        for node in list(self.document.findall(translatable_diagram)):
            node.replace_self(node.children)


def visit_wrapper(self, node) -> None:  # a surviving wrapper (a builder without post-transforms) shows its diagram
    pass


def depart_wrapper(self, node) -> None:
    pass

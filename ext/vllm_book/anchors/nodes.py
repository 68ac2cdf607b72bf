"""Placeholder nodes of the ``src`` domain.

Both are created at parse time holding only the target string; the read-phase
transform (:class:`~vllm_book.anchors.transforms.ResolveAnchors`) resolves
them against the index and stores the result as attributes; the
post-transform (:class:`~vllm_book.anchors.transforms.RenderAnchors`) turns
them into ordinary docutils nodes for the current builder, so no writer ever
sees them.
"""

from __future__ import annotations

from docutils import nodes


class src_ref(nodes.Inline, nodes.Element):
    """``{src}`target``` (also used for the links inside an excerpt).

    Attributes: ``target`` (str), ``explicit_title`` (bool); after resolution
    ``resolved`` (bool), ``path``, ``start``, ``end``, ``kind``, ``qualname``,
    ``lang`` and ``style`` (``"inline"``: a running-text reference; ``"plain"``:
    a caption or "full source" link).
    """


class src_excerpt(nodes.General, nodes.Element):
    """``src-code`` directive; its resolved children are a captioned literal block."""


def _skip(self, node) -> None:  # pragma: no cover - never reached after the post-transform
    raise nodes.SkipNode


NODE_VISITORS = {
    "html": (_skip, None),
    "latex": (_skip, None),
    "text": (_skip, None),
    "man": (_skip, None),
    "texinfo": (_skip, None),
}

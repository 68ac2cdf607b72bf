"""Sphinx extensions of 《vLLM 学习手册》.

``extensions = ["vllm_book"]`` loads every feature below; each feature is a
sub-extension with its own ``setup()`` and can be loaded alone by test roots.
"""

from __future__ import annotations

from sphinx.application import Sphinx

__version__ = "0.1.0"

FEATURES = (
    "vllm_book.config",
    "vllm_book.gate",
    "vllm_book.toc",
    "vllm_book.chapters",
    "vllm_book.anchors",
    "vllm_book.diagrams",
    "vllm_book.browser",
    "vllm_book.search",
    "vllm_book.landmarks",
    "vllm_book.transcripts",
    "vllm_book.drills",
    "vllm_book.intl",
    "vllm_book.formats",
    "vllm_book.sync.card",
    "vllm_book.sync.drift",
)


def setup(app: Sphinx) -> dict[str, object]:
    for name in FEATURES:
        app.setup_extension(name)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}

"""Small helpers shared by the formats modules."""

from __future__ import annotations

import weakref
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.builders import Builder

#: the builders that render diagrams and anchors themselves (Mermaid JS, the browser)
HTML_FAMILY = {"html", "dirhtml", "singlehtml", "readthedocs", "readthedocsdirhtml", "readthedocssinglehtml"}


def repo_root(app: Sphinx) -> Path:
    return Path(app.config.vllm_book_repo_root or app.confdir)


def cache_root(app: Sphinx) -> Path:
    """``vllm_book_cache_dir`` (relative to the conf dir) or ``<repo>/_build/.cache``."""
    configured = app.config.vllm_book_cache_dir
    if configured:
        return (Path(app.confdir) / configured).resolve()
    return repo_root(app) / "_build" / ".cache"


def is_offline(builder: Builder) -> bool:
    """A builder that needs static stand-ins: EPUB, rinoh, LaTeX, … (not HTML, not text-only)."""
    if builder.name.startswith("epub"):
        return True
    if builder.name in HTML_FAMILY or builder.format == "html":
        return False
    return bool(getattr(builder, "supported_image_types", None))


def location(docname_or_path: str, line: int | None) -> str:
    return f"{docname_or_path}:{line}" if line else docname_or_path


_APPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember_app(app: Sphinx) -> None:
    """builder-inited: post-transforms find the application from their environment
    (``SphinxTransform.app`` is deprecated)."""
    _APPS[app.env] = app


def app_of(env) -> Sphinx:
    return _APPS[env]

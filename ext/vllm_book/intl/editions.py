"""The two editions of the book and the way between them: the same page in the other language.

``vllm_book_editions`` maps each language to where its HTML edition lives.  A relative value is a directory
under the build directory — the Makefile's layout, ``_build/html`` for Chinese and ``_build/en/html`` for
English — and the link is made relative from page to page, so it works from a checkout's build as from a
static server over ``_build``.  An absolute value (``https://…/`` or ``/…/``) is a base URL: on Read the Docs
``conf.py`` derives both from ``READTHEDOCS_CANONICAL_URL`` (the editions are two projects, one a translation
of the other).  EPUB and PDF link ``vllm_book_online_editions`` (online bases), since a file has no neighbour.

HTML pages get ``vllm_book_edition_switch`` in their template context (``edition-switch.html`` renders it
in the article header) and a ``<link rel="alternate" hreflang>`` to the other edition.
"""

from __future__ import annotations

import html
import posixpath

from sphinx.application import Sphinx

LABELS = {"zh_CN": ("中文", "zh-CN", "阅读本页的中文原文"), "en": ("English", "en", "Read this page in English")}


def _absolute(value: str) -> bool:
    return value.startswith(("http://", "https://", "/"))


def other_language(app: Sphinx) -> str:
    src, tgt = app.config.vllm_book_intl_source_language, app.config.vllm_book_intl_language
    return tgt if (app.config.language or src) == src else src


def page_url(app: Sphinx, docname: str, lang: str) -> str:
    """The URL of *docname* in the *lang* edition, from the page being written."""
    html_builder = app.builder.format == "html" and app.builder.name in ("html", "dirhtml")
    suffix = "/" if app.builder.name == "dirhtml" else ".html"
    target = docname[:-len("index")] if (suffix == "/" and docname.endswith("index")) else docname + suffix
    if html_builder:
        here = app.config.vllm_book_editions.get(app.config.language or "", "")
        there = app.config.vllm_book_editions.get(lang, "")
        if there and _absolute(there):
            return there.rstrip("/") + "/" + target
        if there and here and not _absolute(here):
            start = posixpath.join(here, posixpath.dirname(docname))
            return posixpath.relpath(posixpath.join(there, target), start)
    base = app.config.vllm_book_online_editions.get(lang, "")
    return base.rstrip("/") + "/" + target if base else ""


def page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is None or pagename not in app.env.all_docs:
        return
    lang = other_language(app)
    url = page_url(app, pagename, lang)
    if not url:
        return
    label, hreflang, title = LABELS.get(lang, (lang, lang, lang))
    context["vllm_book_edition_switch"] = {"href": url, "label": label, "hreflang": hreflang, "title": title}
    context["metatags"] = context.get("metatags", "") + (
        f'\n    <link rel="alternate" hreflang="{hreflang}" href="{html.escape(url, quote=True)}" />')

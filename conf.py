"""Sphinx configuration of 《vLLM 学习手册》 (build with ``-c .``; sources in ``source/``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "ext"))

from vllm_book.pin import Pin, ProvisionError, load_pin  # noqa: E402

try:
    PIN = load_pin(ROOT)
except ProvisionError:
    # a broken pin file: vllm_book.gate reports it at config-inited (file, fix) and stops the build;
    # an exception here would be printed by Sphinx as a traceback inside "Configuration error"
    PIN = Pin("?", "0" * 40, "", "", "", "", ROOT / "vllm-pin.toml")

# -- project -----------------------------------------------------------------
# BOOK_LANG (Makefile) or Read the Docs' READTHEDOCS_LANGUAGE select the edition.
language = os.environ.get("BOOK_LANG") or os.environ.get("READTHEDOCS_LANGUAGE", "zh_CN").replace("-", "_")
if language in ("zh", "zh_cn"):
    language = "zh_CN"
ENGLISH = not language.startswith("zh")

project = "The vLLM Learning Book" if ENGLISH else "vLLM 学习手册"
author = "The vLLM Learning Book authors" if ENGLISH else "vLLM 学习手册作者"
copyright = f"2026, {author}"
version = f"vLLM {PIN.version}"
release = f"vLLM {PIN.version} ({PIN.short})"

locale_dirs = [str(ROOT / "locale")]
gettext_compact = False
gettext_uuid = False

extensions = [
    "myst_parser",
    "sphinx_design",
    "sphinx_copybutton",
    "sphinxcontrib.mermaid",
    "vllm_book",
]

# downloads/: templates a reader downloads ({download} role), not pages of the book
exclude_patterns = ["_build", "_static", "_templates", "_data", "**/.ipynb_checkpoints", "**/downloads"]
templates_path = ["source/_templates"]
html_static_path = ["source/_static"]
html_css_files = ["book.css"]
html_js_files = [("book-a11y.js", {"defer": "defer"})]
suppress_warnings: list[str] = []
nitpicky = False

# -- MyST --------------------------------------------------------------------
myst_enable_extensions = [
    "colon_fence", "deflist", "dollarmath", "amsmath", "tasklist",
    "attrs_inline", "attrs_block", "substitution", "linkify", "fieldlist",
]
myst_heading_anchors = 0  # explicit (label)= targets only: Chinese headings get no stable slugs
myst_linkify_fuzzy_links = False
myst_substitutions = {
    "vllm_version": PIN.version,
    "vllm_commit": PIN.commit,
    "vllm_short": PIN.short,
}

# -- vllm_book ---------------------------------------------------------------
vllm_book_repo_root = str(ROOT)
vllm_book_search_synonyms = "source/_data/search-synonyms.toml"
vllm_book_online_base = os.environ.get(
    "VLLM_BOOK_ONLINE_BASE", "https://vllm-learning-book.readthedocs.io/zh-cn/latest/")
# the two editions (vllm_book.intl.editions): the Makefile layout by default (_build/html, _build/en/html);
# on Read the Docs they are two projects, the English one a translation of the Chinese one, and
# READTHEDOCS_CANONICAL_URL (…/<lang>/<version>/) gives this edition's base, from which the other's follows
_canonical = os.environ.get("READTHEDOCS_CANONICAL_URL", "")
if _canonical:
    import re as _re

    vllm_book_editions = {lang: _re.sub(r"/(zh-cn|en)/", f"/{seg}/", _canonical, count=1)
                          for lang, seg in (("zh_CN", "zh-cn"), ("en", "en"))}

# -- HTML --------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
html_favicon = "source/_static/favicon.svg"
# the theme's first visit (empty localStorage) otherwise logs "Got invalid theme mode: ." as a console error
html_context = {"default_mode": "auto"}
html_last_updated_fmt = ""
html_theme_options = {
    "repository_url": "https://github.com/vllm-learning-book/vllm-learning-book",
    "repository_branch": "main",
    "path_to_docs": "source",
    "use_repository_button": True,
    "use_edit_page_button": True,
    "use_issues_button": True,
    "use_download_button": False,
    "show_toc_level": 2,
    # the same page in the other edition (vllm_book.intl.editions), before the theme's own buttons
    "article_header_end": ["edition-switch.html", "article-header-buttons.html"],
    "home_page_in_toc": True,
    "extra_footer": (f"<p>本书描述 vLLM v{PIN.version}，commit <code>{PIN.commit}</code>。</p>"
                     if language.startswith("zh") else
                     f"<p>This book describes vLLM v{PIN.version}, commit <code>{PIN.commit}</code>.</p>"),
}
html_search_language = "zh" if language.startswith("zh") else "en"
# relative to this directory (vllm_book.search): html_* values are hashed into .buildinfo, which must be the
# same from any clone path
html_search_options = {"dict": "source/_data/jieba-vllm.txt"}

# Mermaid JS is served from _static (copied from the pinned npm package by `make`);
# nothing is loaded from a CDN at read time.
mermaid_use_local = "mermaid/mermaid.esm.min.mjs"
mermaid_include_elk = False
mermaid_include_zenuml = False
mermaid_d3_zoom = False
mermaid_fullscreen = False

# MathJax 3 from the pinned npm package, served from _static (fonts next to it).
mathjax_path = "mathjax/tex-mml-chtml.js"

copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False
copybutton_exclude = ".linenos, .gp, .go"

# -- EPUB --------------------------------------------------------------------
epub_basename = "vllm-learning-book"
epub_title = project
epub_author = author
epub_publisher = author
epub_copyright = copyright
epub_language = "zh-CN" if language.startswith("zh") else language.replace("_", "-")
epub_uid = f"vllm-learning-book-{PIN.short}"
epub_identifier = epub_uid
epub_scheme = "uid"
epub_show_urls = "no"

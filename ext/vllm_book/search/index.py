"""Write side of the book search: the static index and the query script, for builders that have a search page.

The index is BM25F in shape: for every term and document it stores one field-weighted, length-normalised
term frequency (fields and weights: :data:`FIELD_WEIGHTS`); the browser adds the inverse document frequency
and the saturation at query time (``booksearch.js``).  Titles and section titles are stored whole for phrase
matches: a query that is part of a chapter or section title puts that page first.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.search._stopwords.en import ENGLISH_STOPWORDS
from sphinx.util import logging

from ..fsutil import write_atomic
from .collect import FIELDS, DocTerms
from .language import english_stemmer_sources

logger = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
INDEX_FILE = "booksearch-index.js"
SCRIPT_FILE = "booksearch.js"

#: field → (weight, length normalisation b)
FIELD_WEIGHTS: dict[str, tuple[float, float]] = {
    "title": (10.0, 0.0),
    "section": (4.0, 0.3),
    "symbol": (3.0, 0.5),
    "code": (1.0, 0.5),
    "body": (1.0, 0.75),
}
assert tuple(FIELD_WEIGHTS) == FIELDS


def load_synonyms(app: Sphinx) -> list[list[str]]:
    """``vllm_book_search_synonyms``: groups of words that search for each other; bad input is an error."""
    name = app.config.vllm_book_search_synonyms
    if not name:
        return []
    path = Path(app.confdir) / name
    fix = "Fix: groups = [[\"前缀缓存\", \"prefix caching\"], ...] (each group a list of two or more strings)"
    try:
        groups = tomllib.loads(path.read_text(encoding="utf-8")).get("groups")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        logger.error("%s: cannot read search synonyms: %s. %s", path, exc, fix, type="vllm_book", subtype="search")
        return []
    ok = isinstance(groups, list) and all(
        isinstance(g, list) and len(g) >= 2 and all(isinstance(w, str) and w.strip() for w in g) for g in groups)
    if not ok:
        logger.error("%s: 'groups' must be a list of word lists. %s", path, fix, type="vllm_book", subtype="search")
        return []
    return groups


def build_index(docs: dict[str, DocTerms], uris: dict[str, str], synonyms: list[list[str]] = ()) -> dict:
    """The index as a JSON-able dict; *uris* maps docname → the page's URI relative to the output root."""
    names = sorted(docs)
    lengths = {f: [sum(docs[d].counts[f].values()) for d in names] for f in FIELDS}
    avg = {f: (sum(v) / len(v) if v and sum(v) else 1.0) for f, v in lengths.items()}
    postings: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        wtf: dict[str, float] = {}
        for f in FIELDS:
            weight, b = FIELD_WEIGHTS[f]
            norm = 1 - b + b * lengths[f][i] / avg[f]
            for term, tf in docs[name].counts[f].items():
                wtf[term] = wtf.get(term, 0.0) + weight * tf / norm
        for term, value in wtf.items():
            postings.setdefault(term, []).extend((i, max(1, round(value * 10))))
    sections = [[i, anchor, title] for i, name in enumerate(names) for anchor, title in docs[name].sections]
    return {
        "version": 1,
        "docs": [[name, docs[name].title, uris[name]] for name in names],
        "sections": sections,
        "synonyms": [list(g) for g in synonyms],
        "terms": dict(sorted(postings.items())),
    }


def _stemmer_js() -> str:
    """The stemmer of the index side, private to booksearch.js (the page's own ``Stemmer`` is per language)."""
    base, english = english_stemmer_sources()
    return f"const BookSearchStemmer = (() => {{\n{base}\n{english}\nreturn EnglishStemmer;\n}})();\n"


def script_text() -> str:
    stop = json.dumps(sorted(ENGLISH_STOPWORDS), ensure_ascii=False)
    return (f"/* 《vLLM 学习手册》 book search (ext/vllm_book/search); generated, do not edit. */\n"
            f"{_stemmer_js()}const BookSearchStopwords = new Set({stop});\n"
            + (STATIC / SCRIPT_FILE).read_text(encoding="utf-8"))


def write(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: write the index and the script into ``_static`` of a builder with a search page."""
    builder = app.builder
    if exception is not None or not getattr(builder, "search", False) or builder.format != "html":
        return
    docs = {d: t for d, t in getattr(app.env, "vllm_book_search", {}).items() if d in app.env.all_docs}
    if not docs:
        logger.warning("book search: no document was indexed; the search page will find nothing",
                       type="vllm_book", subtype="search")
    uris = {d: builder.get_target_uri(d) for d in docs}
    data = build_index(docs, uris, load_synonyms(app))
    static = Path(builder.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    write_atomic(static / INDEX_FILE, f"BookSearch.setIndex({payload});\n".encode())
    write_atomic(static / SCRIPT_FILE, script_text().encode())
    logger.info("book search: %d documents, %d terms, %d KB", len(data["docs"]), len(data["terms"]),
                math.ceil(len(payload.encode()) / 1024))


def add_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """``html-page-context``: the search page (only) loads the book search after Sphinx's searchtools."""
    if pagename == "search" and getattr(app.builder, "search", False):
        app.add_js_file(SCRIPT_FILE, loading_method="defer")
        app.add_js_file(INDEX_FILE, loading_method="defer")

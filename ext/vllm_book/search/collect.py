"""Read phase of the book search: what each document says, by field, kept in the environment.

Runs on ``doctree-read`` (in the reader processes of a parallel build), after the anchor transform has
resolved every ``{src}`` placeholder, and stores one :class:`DocTerms` per document in
``env.vllm_book_search``; ``env-merge-info`` and ``env-purge-doc`` keep that dict right for parallel and
incremental builds.  The write side (:mod:`.index`) turns it into the static index.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

from ..anchors.nodes import src_excerpt, src_ref
from ..anchors.resolve import AnchorError, parse_target
from . import tokens
from .language import dict_path

#: the fields of a document, in the order the index stores their weights
FIELDS = ("title", "section", "symbol", "code", "body")

#: elements whose text is not read as prose (Mermaid sources, raw HTML, comments, substitution defs)
_SKIP = (nodes.comment, nodes.raw, nodes.substitution_definition, nodes.system_message)


@dataclass
class DocTerms:
    title: str
    #: (anchor id, section title) of every section below the document title
    sections: list[tuple[str, str]] = field(default_factory=list)
    #: field name → term → count
    counts: dict[str, Counter] = field(default_factory=lambda: {f: Counter() for f in FIELDS})


def _field_of(text: nodes.Text) -> str | None:
    """Which field a text node belongs to (None: not indexed), from its nearest deciding ancestor."""
    node = text.parent
    while node is not None:
        if isinstance(node, _SKIP) or node.tagname == "mermaid":
            return None
        if isinstance(node, nodes.title):
            parent = node.parent
            if isinstance(parent, nodes.section) and isinstance(parent.parent, nodes.document):
                return "title"
            return "section"
        if isinstance(node, src_ref):
            # an explicit title is prose; a default one is counted from the target (see collect)
            return "body" if node.get("explicit_title") else None
        if isinstance(node, (nodes.literal_block, src_excerpt)):
            return "code"
        if isinstance(node, nodes.literal):
            return "code"
        node = node.parent
    return "body"


def _section_anchor(section: nodes.section) -> str:
    ids = section.get("ids", [])
    named = [i for i in ids if not (i.startswith("id") and i[2:].isdigit())]
    return (named or ids or [""])[0]


def collect(doctree: nodes.document, title: str) -> DocTerms:
    doc = DocTerms(title=title)
    for section in doctree.findall(nodes.section):
        if isinstance(section.parent, nodes.document):
            continue
        if section.children and isinstance(section[0], nodes.title):
            doc.sections.append((_section_anchor(section), section[0].astext()))
    for text in doctree.findall(nodes.Text):
        name = _field_of(text)
        if name:
            doc.counts[name].update(tokens.terms(text.astext()))
    # What an anchor points at is a symbol of the page, whatever its link text.  Read from the target string:
    # doctree-read fires in the same transform slot as the anchor resolution, so placeholders may be unresolved
    # here (no qualname, no default text yet).
    for ref in doctree.findall(src_ref):
        try:
            target = parse_target(ref.get("target", ""))
        except AnchorError:
            continue  # the anchor transform reports it
        if target.qualname:
            doc.counts["symbol"].update(tokens.latin_terms(target.qualname))
            last = target.qualname.rsplit(".", 1)[-1]
            if last != target.qualname:
                doc.counts["symbol"].update(tokens.latin_terms(last))
        elif not target.text:
            doc.counts["symbol"].update(tokens.latin_terms(target.path.rsplit("/", 1)[-1]))
        if target.text and not ref.get("explicit_title"):
            doc.counts["code"].update(tokens.terms(target.text))
    return doc


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    if not hasattr(env, "vllm_book_search"):
        env.vllm_book_search = {}
    if env.metadata.get(env.docname, {}).get("nosearch") is not None:
        env.vllm_book_search.pop(env.docname, None)
        return
    tokens.use_dictionary(dict_path(app))
    title = env.titles[env.docname].astext() if env.docname in env.titles else env.docname
    env.vllm_book_search[env.docname] = collect(doctree, title)


def on_purge_doc(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    getattr(env, "vllm_book_search", {}).pop(docname, None)


def on_merge_info(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    if not hasattr(env, "vllm_book_search"):
        env.vllm_book_search = {}
    theirs = getattr(other, "vllm_book_search", {})
    for docname in docnames:
        if docname in theirs:
            env.vllm_book_search[docname] = theirs[docname]

"""How much of each page the English catalogs translate: counted while reading, shown as a banner and a page.

:class:`CountMessages` runs just before Sphinx's own ``Locale`` transform (priority 20), over the same
messages (``sphinx.util.nodes.extract_messages``), and looks each one up in the translated edition's catalog
(``<locale_dir>/<vllm_book_intl_language>/LC_MESSAGES/<docname>.po``, read with :mod:`.po` — the entries Sphinx
compiles: not fuzzy, not empty).  It runs in both editions, so the Chinese edition's status page shows the
same figures.  Per page it stores ``(total, missing)`` — the message count and the ``(line, msgid)`` of each
untranslated one — in ``env.vllm_book_intl`` (merged for parallel reads), and notes the catalog as a dependency,
so a changed catalog re-reads the page.

In the translated edition a page with an incomplete catalog gets a :class:`translation_banner` after its title;
``{translation-status}`` leaves a :class:`translation_status` placeholder.  Both are resolved at
``doctree-resolved`` for the builder at hand: HTML links the other edition relatively (:mod:`.editions`),
EPUB/PDF link its online URL.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.i18n import docname_to_domain
from sphinx.util.nodes import extract_messages, make_refnode

from . import editions, po

logger = logging.getLogger(__name__)

TEXT = {
    "en": {
        "title": "Translation in progress",
        "banner": "{pct} % of this page ({done} of {total} passages) is in English; "
                  "the rest is shown in the original Chinese. ",
        "original": "Read the Chinese original",
        "head": ("Page", "Passages", "In English", "Share"),
        "total": "All pages",
    },
    "zh": {
        "head": ("页面", "段落", "已译成英文", "占比"),
        "total": "全部页面",
    },
}


class translation_banner(nodes.General, nodes.Element):
    """Placeholder: ``done``, ``total`` of this page; becomes an admonition per builder."""


class translation_status(nodes.General, nodes.Element):
    """Placeholder of ``{translation-status}``: the coverage table, built when every page has been read."""


def _lang(config) -> str:
    return "zh" if (config.language or "zh_CN").startswith("zh") else "en"


def catalog_path(env: BuildEnvironment, docname: str) -> Path | None:
    config = env.config
    domain = docname_to_domain(docname, config.gettext_compact)
    for d in config.locale_dirs:
        path = Path(env.srcdir) / d / config.vllm_book_intl_language / "LC_MESSAGES" / f"{domain}.po"
        if path.is_file():
            return path
    return None


def store(env: BuildEnvironment) -> dict[str, tuple[int, list[tuple[int, str]]]]:
    """Per page: its message count and the ``(line, msgid)`` of each message its catalog does not translate."""
    if not hasattr(env, "vllm_book_intl"):
        env.vllm_book_intl = {}
    return env.vllm_book_intl


def figures(env: BuildEnvironment, docname: str) -> tuple[int, int]:
    """``(translated, total)`` of a page."""
    total, missing = store(env)[docname]
    return total - len(missing), total


def _translate_math_block(node: nodes.TextElement, latex: str) -> None:
    """Apply a display formula's (or a Chinese code block's, :mod:`.literals`) translation directly.

    Sphinx 9's Locale transform re-parses a translated literal-type message (math blocks included) as
    ``"::\\n\\n" + msgstr``, reST's literal-block marker; MyST reads that as a paragraph "::", so the formula
    would become "::".  The formula's text (its ``\\text{…}`` words) is replaced here instead; Locale then finds
    no catalog entry for the new text and leaves the node alone.
    """
    node.children = [nodes.Text(latex)]
    node.rawsource = latex
    node["translated"] = True


def _in_docinfo(node: nodes.Node) -> bool:
    """Is *node* in the front matter?  At priority 19 MyST's front matter is still a field list at the top of the
    document (docutils' DocInfo transform, at 340, turns it into docinfo and Sphinx moves it into metadata), so
    gettext never sees it; the header card shows its values instead, as messages of their own."""
    p = node.parent
    while p is not None:
        if isinstance(p, nodes.docinfo) or (isinstance(p, nodes.field_list) and isinstance(p.parent, nodes.document)):
            return True
        p = p.parent
    return False


class CountMessages(SphinxTransform):
    default_priority = 19  # before sphinx.transforms.i18n.Locale (20) replaces the messages

    def apply(self, **kwargs) -> None:
        env, docname = self.env, self.env.docname
        path = catalog_path(env, docname)
        translations: dict[str, str] = {}
        if path is not None:
            env.note_dependency(str(path))
            try:
                translations = po.cached(path).translations()
            except po.POError as exc:
                logger.warning("%s (fix: %s); the page counts as untranslated", exc.message, exc.fix,
                               location=f"{exc.path}:{exc.line}", type="vllm_book", subtype="intl")
        total = 0
        missing: list[tuple[int, str]] = []
        translating = self.config.language == self.config.vllm_book_intl_language
        for node, msg in extract_messages(self.document):
            if _in_docinfo(node):  # the front matter: Sphinx moves it into metadata; the card shows it instead
                continue
            total += 1
            if translations.get(msg, "").strip():
                if isinstance(node, (nodes.math_block, nodes.literal_block)) and translating:
                    _translate_math_block(node, translations[msg])
            else:
                missing.append((node.line or 0, msg))
        store(env)[docname] = (total, missing)
        if translating and missing:
            self._insert_banner(total - len(missing), total)

    def _insert_banner(self, done: int, total: int) -> None:
        # the page's own docname: single-document builders (PDF) resolve every page under the root document's name
        banner = translation_banner(done=done, total=total, docname=self.env.docname)
        section = next(iter(self.document.findall(nodes.section)), None)
        if section is not None and section.children and isinstance(section[0], nodes.title):
            section.insert(1, banner)
        else:
            self.document.insert(0, banner)


class TranslationStatus(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        pages = getattr(self.env, "vllm_book_intl_status_pages", set())
        pages.add(self.env.docname)
        self.env.vllm_book_intl_status_pages = pages
        return [translation_status()]


def _banner(app: Sphinx, docname: str, node: translation_banner) -> nodes.Node:
    t = TEXT["en"]
    done, total = node["done"], node["total"]
    pct = done * 100 // total  # floor: a page never reads "100 %" before it is
    para = nodes.paragraph()
    para += nodes.Text(t["banner"].format(pct=pct, done=done, total=total))
    url = editions.page_url(app, node.get("docname", docname), app.config.vllm_book_intl_source_language)
    para += nodes.reference("", t["original"], refuri=url, internal=False)
    para += nodes.Text(".")
    box = nodes.admonition(classes=["note", "translation-banner"])
    box += nodes.title("", t["title"])
    box += para
    return box


def _table(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    env, builder = app.env, app.builder
    data = {d: figures(env, d) for d in store(env)}
    t = TEXT[_lang(app.config)]
    # front pages (index, guide/…) first, then the parts in their numbered order
    docs = sorted((d for d in data if d in env.all_docs), key=lambda d: (d[:1].isdigit(), d != "index", d))
    groups: dict[str, list[str]] = {}
    for d in docs:
        groups.setdefault(d.split("/")[0] if "/" in d else "", []).append(d)

    def cell(*children: nodes.Node) -> nodes.entry:
        entry = nodes.entry()
        para = nodes.paragraph(translatable=False)
        para.extend(children)
        entry += para
        return entry

    def row(label: nodes.Node, done: int, total: int, strong: bool = False) -> nodes.row:
        r = nodes.row(classes=["translation-group"] if strong else [])
        share = f"{done * 100 // total} %" if total else "–"
        r += cell(label)
        for s in (str(total), str(done), share):
            r += cell(nodes.strong(s, s) if strong else nodes.Text(s))
        return r

    def link(d: str, strong: bool = False) -> nodes.Node:
        title = env.titles[d].astext() if d in env.titles else d
        inner = nodes.strong(title, title) if strong else nodes.inline(title, title)
        return make_refnode(builder, fromdoc, d, None, inner, title)

    table = nodes.table(classes=["translation-status"])
    group = nodes.tgroup(cols=4)
    table += group
    for width in (55, 15, 15, 15):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    hrow = nodes.row()
    for label in t["head"]:
        hrow += cell(nodes.Text(label))
    head += hrow
    group += head
    body = nodes.tbody()
    all_done = all_total = 0
    for key, members in groups.items():
        g_done = sum(data[d][0] for d in members)
        g_total = sum(data[d][1] for d in members)
        all_done, all_total = all_done + g_done, all_total + g_total
        index = f"{key}/index" if key else ""
        if index in members:  # a part: its page (with the part's totals), then its chapters
            body += row(link(index, strong=True), g_done, g_total, strong=True)
        for d in members:
            if d != index:
                body += row(link(d), *data[d])
    body += row(nodes.strong(t["total"], t["total"]), all_done, all_total, strong=True)
    group += body
    return [table]


def resolve(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(translation_banner)):
        node.replace_self(_banner(app, docname, node))
    for node in list(doctree.findall(translation_status)):
        node.replace_self(_table(app, docname))


def purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    store(env).pop(docname, None)
    getattr(env, "vllm_book_intl_status_pages", set()).discard(docname)


def merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    store(env).update(getattr(other, "vllm_book_intl", {}))
    pages = getattr(env, "vllm_book_intl_status_pages", set())
    pages |= getattr(other, "vllm_book_intl_status_pages", set())
    env.vllm_book_intl_status_pages = pages


def note_read(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    env.vllm_book_intl_reread = bool(docnames)


def updated(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """The status pages are rewritten whenever any page was read (their figures may have changed)."""
    if getattr(env, "vllm_book_intl_reread", False):
        return sorted(getattr(env, "vllm_book_intl_status_pages", set()))
    return []


def visit_skip(self, node) -> None:
    raise nodes.SkipNode


def write_report(app: Sphinx, exc: Exception | None) -> None:
    """``translation-status.json`` beside the HTML of the translated edition: per page its figures and the
    messages still untranslated (with their source line), for translators and for tooling."""
    if exc is not None or app.builder.format != "html" or app.builder.name == "epub":
        return
    if app.config.language != app.config.vllm_book_intl_language:
        return
    import json

    data = store(app.env)
    pages = {d: {"translated": total - len(missing), "total": total,
                 "missing": [{"line": line, "msgid": msg} for line, msg in missing]}
             for d, (total, missing) in sorted(data.items()) if d in app.env.all_docs}
    out = Path(app.outdir) / "translation-status.json"
    out.write_text(json.dumps({"language": app.config.language, "pages": pages}, ensure_ascii=False, indent=1),
                   encoding="utf-8")

"""Book structure from ``curriculum.toml``: toctrees, part pages, learning paths.

Directives (all take their data from the curriculum, never from the page):

* ``book-parts`` — the root toctree: one entry per part index page.
* ``part-chapters`` *part-dir* — every chapter of the part with its hook, linked when written, marked
  编写中 when planned (no empty pages); a hidden toctree of the written ones keeps the navigation, the
  EPUB/PDF order and their tables of contents as they were.
* ``track`` *name* — a learning path: its chapters in reading order, linked
  when written, marked 编写中 when planned.

A chapter whose H1 differs from its curriculum title gets a warning.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util import docname_join

from vllm_book import curriculum as cur_mod
from vllm_book.chapters import labels

logger = logging.getLogger(__name__)



_CACHE: dict[tuple[str, float], cur_mod.Curriculum] = {}


def get_curriculum(srcdir: str | Path, config: Config) -> cur_mod.Curriculum:
    """The curriculum, loaded once per file version (reader processes load their own).

    A relative ``vllm_book_curriculum`` is taken from ``vllm_book_repo_root``,
    or from the source directory when that is unset (test roots).
    """
    path = Path(config.vllm_book_repo_root or srcdir) / config.vllm_book_curriculum
    key = (str(path), path.stat().st_mtime)
    if key not in _CACHE:
        _CACHE[key] = cur_mod.load(path)
    return _CACHE[key]


def planned_nodes(config: Config, title: str) -> list[nodes.Node]:
    """``title（编写中）`` in the edition's language."""
    lab = labels(config)
    return [nodes.Text(title + lab["open"]), nodes.emphasis("", lab["planned"]), nodes.Text(lab["close"])]


def _toctree(directive: SphinxDirective, entries: list[str], maxdepth: int = 1, caption: str | None = None,
             hidden: bool = False) -> nodes.Node:
    toc = addnodes.toctree()
    directive.set_source_info(toc)  # the caption's catalog location (a translator sees the file and line)
    docname = directive.env.docname
    toc["parent"] = docname
    toc["entries"] = [(None, e) for e in entries]
    toc["includefiles"] = list(entries)
    toc["maxdepth"] = maxdepth
    toc["caption"] = caption
    toc["glob"] = False
    toc["hidden"] = hidden
    toc["includehidden"] = False
    toc["numbered"] = 0
    toc["titlesonly"] = True
    return nodes.compound("", toc, classes=["toctree-wrapper"])


class _CurriculumDirective(SphinxDirective):
    def curriculum(self) -> cur_mod.Curriculum:
        cur = get_curriculum(self.env.srcdir, self.config)
        self.env.note_dependency(str(cur.path))
        return cur

    def planned(self, title: str) -> list[nodes.Node]:
        return planned_nodes(self.config, title)

    def doc(self, docname: str) -> str:
        return "/" + docname

    def link(self, c: cur_mod.Chapter) -> list[nodes.Node]:
        # the Chinese edition shows the curriculum title; a translated edition the page's own (translated) title
        explicit = (self.config.language or "zh_CN") == self.config.vllm_book_intl_source_language
        ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=self.doc(c.path),
                                    refexplicit=explicit, refwarn=True, refdoc=self.env.docname)
        ref += nodes.inline(c.title, c.title)
        return [ref]

    def hook(self, c: cur_mod.Chapter) -> list[nodes.Node]:
        if not c.hook:
            return []
        # the inner inline is a message of this page's catalog (gettext extracts it, the Locale transform
        # translates it; Sphinx's RemoveTranslatableInline then unwraps it, so the outer span keeps the class)
        message = nodes.inline(c.hook, c.hook, translatable=True)
        message.source, message.line = self.get_source_info()
        return [nodes.Text(" — "), nodes.inline("", "", message, classes=["chapter-hook"])]


class BookParts(_CurriculumDirective):
    """The root toctree: every part's index page (it lists written and planned chapters)."""

    option_spec = {"caption": directives.unchanged, "hidden": directives.flag}

    def run(self) -> list[nodes.Node]:
        cur = self.curriculum()
        entries = [f"{p.dir}/index" for p in cur.parts]
        return [_toctree(self, entries, maxdepth=2, caption=self.options.get("caption"),
                         hidden="hidden" in self.options)]


class PartChapters(_CurriculumDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        cur = self.curriculum()
        part = next((p for p in cur.parts if p.dir == self.arguments[0]), None)
        if part is None:
            raise self.error(f"part {self.arguments[0]!r} is not in {cur.path.name}; "
                             f"known: {', '.join(p.dir for p in cur.parts)}")
        out: list[nodes.Node] = [_toctree(self, [c.path for c in part.chapters if c.written],
                                          hidden=True)]
        blist = nodes.bullet_list(classes=["part-chapters"])
        for c in part.chapters:
            para = nodes.paragraph("", "", *(self.link(c) if c.written else self.planned(c.title)))
            para += self.hook(c)
            blist += nodes.list_item("", para, classes=["planned-chapter"] if not c.written else [])
        out.append(blist)
        return out


class Track(_CurriculumDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        cur = self.curriculum()
        name = self.arguments[0]
        if name not in cur_mod.TRACKS:
            raise self.error(f"unknown track {name!r}; use one of {', '.join(cur_mod.TRACKS)}")
        enum = nodes.enumerated_list(classes=["learning-path"])
        for c in cur.track(name):
            para = nodes.paragraph("", "", *(self.link(c) if c.written else self.planned(c.title)))
            para += nodes.Text(f" · {labels(self.config).get(c.level, c.level)}")
            para += self.hook(c)
            enum += nodes.list_item("", para)
        return [enum]


def check_titles(app: Sphinx, doctree: nodes.document) -> None:
    cur = get_curriculum(app.srcdir, app.config)
    ch = cur.chapter(app.env.docname)
    if ch is None:
        return
    if not ch.written:
        logger.warning("%s is listed as status = \"planned\" in %s but the file exists; set status = \"written\"",
                       ch.path, cur.path.name, location=(app.env.docname, 1), type="vllm_book", subtype="curriculum")
    title = doctree.next_node(nodes.title)
    if title is not None and title.astext().strip() != ch.title and app.config.language.startswith("zh"):
        logger.warning("H1 %r differs from the curriculum title %r (%s:%d); make them equal",
                       title.astext().strip(), ch.title, cur.path.name, ch.line,
                       location=title, type="vllm_book", subtype="curriculum")
        from .chapters import _note_failure

        _note_failure(app.env)  # re-read next time: an incremental build fails again


def planned_reference(app: Sphinx, env, node: addnodes.pending_xref, contnode: nodes.Element) -> nodes.Node | None:
    """A ``{doc}`` link to a *planned* chapter renders as its title + 编写中, not as a broken link.

    When the chapter is written the same link resolves normally; a link to a
    document that is neither on disk nor in the curriculum still warns.
    """
    if node.get("refdomain") != "std" or node.get("reftype") != "doc":
        return None
    target = docname_join(node.get("refdoc", env.docname), node["reftarget"])
    ch = get_curriculum(app.srcdir, app.config).chapter(target.lstrip("/"))
    if ch is None or ch.written:
        return None
    text = contnode.astext() if node.get("refexplicit") else ch.title
    return nodes.inline("", "", *planned_nodes(app.config, text), classes=["planned-chapter-ref"])


def check_disk(app: Sphinx) -> None:
    cur = get_curriculum(app.srcdir, app.config)
    for file, line, msg in cur_mod.check(cur, Path(app.srcdir)):
        logger.warning(msg, location=f"{file}:{line}", type="vllm_book", subtype="curriculum")


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.add_directive("book-parts", BookParts)
    app.add_directive("part-chapters", PartChapters)
    app.add_directive("track", Track)
    app.connect("builder-inited", check_disk)
    app.connect("doctree-read", check_titles)
    app.connect("missing-reference", planned_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

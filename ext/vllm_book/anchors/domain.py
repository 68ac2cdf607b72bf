"""The ``src`` domain: role, directive, citations data (merged across parallel readers)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Set
from typing import TYPE_CHECKING, Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.domains import Domain
from sphinx.util.docutils import ReferenceRole, SphinxDirective

from .excerpt import split_emphasize
from .nodes import src_excerpt, src_ref

if TYPE_CHECKING:
    from sphinx.environment import BuildEnvironment


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


class SrcRole(ReferenceRole):
    """``{src}`path::Qual.name``` / ``{src}`text <target>```.

    Link text is shown in code font, except explicit text with a Chinese character in it (``{src}`这一行 <…>```),
    which is prose and keeps the body font (the readability lint counts it as prose, not code)."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        node = src_ref(self.rawtext, target=self.target.strip(), explicit_title=self.has_explicit_title)
        if self.has_explicit_title:
            if _CJK.search(self.title):
                node += nodes.inline(self.title, self.title, classes=["src-text"])
            else:
                node += nodes.literal(self.title, self.title)
        self.set_source_info(node)
        return [node], []


def _positive_int(arg: str | None) -> int:
    return directives.positive_int(arg)


class SrcCode(SphinxDirective):
    """``src-code``: a highlighted excerpt of a symbol (or file/line range) of the tree.

    Options:

    ``:emphasize: text[; text…]``
        emphasise every shown line containing one of the ``;``-separated texts
        (each text must match at least one shown line).
    ``:focus: text``
        start the excerpt at the one line of the target containing *text*.
    ``:max-lines: N``
        show at most N lines; a cut excerpt gets a "完整源码 →" link.
    ``:caption: text``
        caption text (default: ``path:start-end`` of the shown lines); it
        always links to the shown lines in the source browser.
    ``:no-linenos:``
        hide line numbers (shown by default, numbered as in the file).
    ``:class:``, ``:name:``
        as for ``code-block``.
    """

    required_arguments = 1
    optional_arguments = 0
    final_argument_whitespace = True
    has_content = False
    option_spec: ClassVar[dict[str, Any]] = {
        "emphasize": directives.unchanged_required,
        "focus": directives.unchanged_required,
        "max-lines": _positive_int,
        "caption": directives.unchanged_required,
        "no-linenos": directives.flag,
        "class": directives.class_option,
        "name": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        opts = self.options
        emphasize = split_emphasize(opts.get("emphasize"))
        # each option's own line, so a problem points at it (as make validate does)
        option_lines = {}
        for i, text in enumerate(self.block_text.splitlines()):
            key = text.strip().split(":", 2)[1] if text.strip().startswith(":") and text.count(":") >= 2 else ""
            if key in ("focus", "emphasize") and key not in option_lines:
                option_lines[key] = self.lineno + i
        node = src_excerpt(
            self.block_text,
            target=self.arguments[0].strip(),
            emphasize=emphasize,
            focus=opts.get("focus"),
            max_lines=opts.get("max-lines"),
            caption=opts.get("caption"),
            linenos="no-linenos" not in opts,
            classes=list(opts.get("class", [])),
            option_lines=option_lines,
        )
        self.set_source_info(node)
        if opts.get("caption"):
            # the caption is prose: a message of the page's catalog, translated by Sphinx's Locale transform
            # before ResolveAnchors (priority 880) builds the excerpt around it
            cap = nodes.caption(opts["caption"], opts["caption"])
            self.set_source_info(cap)
            node += cap
        self.add_name(node)
        return [node]


@dataclasses.dataclass(frozen=True)
class Citation:
    """One place in the book that cites a source location (for backlinks)."""

    path: str  # "vllm/v1/attention/backends/" for a directory
    qualname: str  # "" for a file/directory (or a file-level line)
    kind: str  # "symbol" | "file" | "dir" | "line"
    start: int
    end: int
    docname: str
    lineno: int
    node_id: str  # the anchor id in the chapter page (``src-3``)
    title: str  # the chapter's title (from env.titles)
    target: str  # the anchor as written
    excerpt: bool  # cited by a ``src-code`` excerpt (rather than an inline role)


class SrcDomain(Domain):
    """Holds the citations; the author-facing role/directive are also
    registered unprefixed (``{src}``, ``src-code``)."""

    name = "src"
    label = "vLLM source"
    roles: ClassVar[dict] = {"ref": SrcRole()}
    directives: ClassVar[dict] = {"code": SrcCode}
    initial_data: ClassVar[dict[str, Any]] = {"citations": {}, "failing": {}}
    data_version = 2

    @property
    def citations(self) -> dict[str, list[tuple]]:
        """docname → [(path, qualname, kind, start, end, lineno, node_id, target, excerpt)]."""
        return self.data.setdefault("citations", {})

    def note_citation(self, docname: str, row: tuple) -> None:
        self.citations.setdefault(docname, []).append(row)

    @property
    def failing(self) -> dict[str, int]:
        """docname → number of anchor errors / unmanaged lines reported while reading it.

        These documents are re-read on every build (``env-get-outdated``), so an
        incremental build repeats their warnings instead of passing silently.
        """
        return self.data.setdefault("failing", {})

    def note_failure(self, docname: str) -> None:
        self.failing[docname] = self.failing.get(docname, 0) + 1

    def clear_doc(self, docname: str) -> None:
        self.citations.pop(docname, None)
        self.failing.pop(docname, None)

    def merge_domaindata(self, docnames: Set[str], otherdata: dict[str, Any]) -> None:
        for key in ("citations", "failing"):
            other = otherdata.get(key, {})
            mine = self.data.setdefault(key, {})
            for docname in docnames:
                if docname in other:
                    mine[docname] = other[docname] if key == "failing" else list(other[docname])

    def resolve_any_xref(self, *args: Any, **kwargs: Any) -> list:
        return []


def get_citations(env: BuildEnvironment) -> dict[tuple[str, str], list[Citation]]:
    """``(path, qualname)`` → citations, for the browser's "被本书引用" backlinks.

    ``qualname`` is ``""`` for a file (and for a line outside any symbol);
    directories are keyed ``("vllm/v1/attention/backends/", "")``.  A line
    anchor is filed under its enclosing symbol.  Lists are sorted by
    (docname, lineno).
    """
    domain = env.get_domain("src")
    out: dict[tuple[str, str], list[Citation]] = {}
    for docname in sorted(domain.citations):  # type: ignore[attr-defined]
        title_node = env.titles.get(docname)
        title = title_node.astext() if title_node is not None else docname
        for path, qual, kind, start, end, lineno, node_id, target, excerpt in domain.citations[docname]:  # type: ignore[attr-defined]
            out.setdefault((path, qual), []).append(
                Citation(path, qual, kind, start, end, docname, lineno, node_id, title, target, excerpt)
            )
    for rows in out.values():
        rows.sort(key=lambda c: (c.docname, c.lineno))
    return out


def citations_for_file(env: BuildEnvironment, path: str) -> list[Citation]:
    """Every citation of *path* (file, its symbols and lines), sorted by (docname, lineno)."""
    rows: Iterable[Citation] = (c for (p, _q), cs in get_citations(env).items() if p == path for c in cs)
    return sorted(rows, key=lambda c: (c.docname, c.lineno))

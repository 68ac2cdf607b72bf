"""Read-phase resolution (errors, citations, excerpt text) and per-builder rendering."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from .. import urls
from .lint import OPT_OUT_CLASS, find_unmanaged
from .nodes import src_excerpt, src_ref
from .excerpt import FIX, make_excerpt
from .resolve import AnchorError, Resolution, parse_target, resolve

if TYPE_CHECKING:
    from ..index import SourceIndex

logger = logging.getLogger(__name__)

WARNING_TYPE = "vllm_book"
FULL_SOURCE_TEXT = "完整源码 →"
FULL_SOURCE_TEXT_EN = "Full source →"


def _take_caption(node: nodes.Element) -> nodes.caption | None:
    """Remove the placeholder's caption child (the directive's ``:caption:``, as the page's language has it)."""
    cap = next((c for c in node.children if isinstance(c, nodes.caption)), None)
    if cap is not None:
        node.remove(cap)
    return cap
LEXERS = {
    "py": "python", "pyi": "python", "cu": "cuda", "cuh": "cuda", "json": "json", "yaml": "yaml", "yml": "yaml",
    "toml": "toml", "md": "markdown", "sh": "bash", "jinja": "jinja", "cmake": "cmake",
}  # fmt: skip


def lexer_for(path: str, lang: str) -> str:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext in LEXERS:
        return LEXERS[ext]
    return "cpp" if lang == "cpp" else ("python" if lang == "python" else "text")


def _warn(msg: str, node: nodes.Node, subtype: str = "anchor") -> None:
    logger.warning(msg, type=WARNING_TYPE, subtype=subtype, location=node)


def _store(node: nodes.Element, res: Resolution) -> None:
    node["resolved"] = True
    node["path"] = res.path
    node["start"] = res.start
    node["end"] = res.end
    node["kind"] = res.kind
    node["qualname"] = res.qualname
    node["lang"] = res.lang


def _default_text(res: Resolution, target: str) -> str:
    if res.kind == "dir":
        return res.path + "/"
    if res.kind == "file":
        return res.path
    if res.kind == "line":
        t = parse_target(target)
        return t.text or f"{res.path}:{res.start}"
    return parse_target(target).qualname


def _source_lines(document: nodes.document) -> list[str]:
    try:
        with open(document["source"], encoding="utf-8") as f:
            return f.read().splitlines()
    except (OSError, KeyError, UnicodeDecodeError):
        return []


def _role_line(lines: list[str], node: nodes.Element) -> int | None:
    """The line of the role itself: MyST gives an inline role the line of its paragraph (as validate's scanner
    does not), so a role on the second line of a paragraph would be reported one line off."""
    start = node.line
    raw = node.rawsource or ""  # MyST writes it as :src:`text`; the file has {src}`text`
    raw = raw[raw.find("`"):] if "`" in raw else raw
    if not start or not raw or not lines:
        return start
    for n in range(start, min(start + 200, len(lines)) + 1):
        if raw in lines[n - 1]:
            return n
    return start


class ResolveAnchors(SphinxTransform):
    """Resolve every placeholder of the document (read phase).

    Reports unresolved/ambiguous anchors with the document location, gives each
    placeholder a stable id (``src-<n>`` in document order), records citations
    in the domain data, fills excerpts, and notes the cited source files as
    dependencies of the document (so an edited source file re-reads it).
    """

    default_priority = 880

    def apply(self, **kwargs: Any) -> None:
        from . import get_index

        placeholders = [n for n in self.document.findall(lambda n: isinstance(n, (src_ref, src_excerpt)))]
        if not placeholders:
            return
        index = get_index(self.env)
        domain = self.env.get_domain("src")
        docname = self.env.docname
        n = 0
        lines = _source_lines(self.document)
        for node in placeholders:
            if node.get("auxiliary"):
                continue
            if isinstance(node, src_ref):
                node.line = _role_line(lines, node)
            n += 1
            node_id = f"src-{n}"
            target = node["target"]
            try:
                res = resolve(index, target)
            except AnchorError as exc:
                self._unresolved(node, target, exc)
                continue
            if res.kind != "dir":
                self.env.note_dependency(str(index.root / res.path))
            if isinstance(node, src_ref):
                _store(node, res)
                node["ids"].append(node_id)
                node["style"] = "inline"
                if not node.children:
                    text = _default_text(res, target)
                    node += nodes.literal(text, text)
                cited = (res.start, res.end)
                excerpt = False
            else:
                shown = self._excerpt(node, res, index, node_id)
                if shown is None:
                    continue
                cited = shown
                excerpt = True
            path = res.path + "/" if res.kind == "dir" else res.path
            domain.note_citation(  # type: ignore[attr-defined]
                docname, (path, res.qualname, res.kind, cited[0], cited[1], node.line or 0, node_id, target, excerpt)
            )

    def _unresolved(self, node: nodes.Element, target: str, exc: AnchorError) -> None:
        what = "source excerpt" if isinstance(node, src_excerpt) else "source anchor"
        _warn(f"unresolved {what} {target!r}: {exc}\n    fix: {exc.fix}", node)
        self.env.get_domain("src").note_failure(self.env.docname)  # type: ignore[attr-defined]
        node["resolved"] = False
        if isinstance(node, src_ref) and not node.children:
            node += nodes.literal(target, target)
        if isinstance(node, src_excerpt):
            _take_caption(node)
            para = nodes.paragraph("", "", classes=["src-excerpt", "unresolved"])
            para += nodes.literal(target, target)
            node += para

    def _excerpt(self, node: src_excerpt, res: Resolution, index: SourceIndex, node_id: str) -> tuple[int, int] | None:
        ex, problems = make_excerpt(index, res, target=node["target"], focus=node.get("focus"),
                                    emphasize=node.get("emphasize", []), max_lines=node.get("max_lines"))
        option_lines = node.get("option_lines") or {}
        for p in problems:  # make validate reports the same (vllm_book.anchors.excerpt)
            line = option_lines.get(p.option) or node.line
            if p.fatal:
                _take_caption(node)
                node["resolved"] = False
                para = nodes.paragraph("", "", classes=["src-excerpt", "unresolved"])
                para += nodes.literal(node["target"], node["target"])
                node += para
            logger.warning(f"{p.message}\n    fix: {FIX[p.option]}", type=WARNING_TYPE, subtype="anchor",
                           location=(self.env.docname, line))
            self.env.get_domain("src").note_failure(self.env.docname)  # type: ignore[attr-defined]
        if ex is None:
            _take_caption(node)
            return None
        start, end, full_end, shown, hl = ex.start, ex.end, ex.full_end, ex.shown, ex.hl
        truncated = ex.truncated
        focus = node.get("focus")
        code = textwrap.dedent("\n".join(shown))
        literal = nodes.literal_block(code, code)
        literal["language"] = lexer_for(res.path, res.lang)
        literal["linenos"] = bool(node.get("linenos", True))
        literal["highlight_args"] = {"linenostart": start}
        if hl:
            literal["highlight_args"]["hl_lines"] = sorted(set(hl))
        literal["classes"] += ["src-excerpt-code", *node.get("classes", [])]
        literal.source, literal.line = node.source, node.line
        wrapper = nodes.container("", literal_block=True, classes=["literal-block-wrapper", "src-excerpt"])
        wrapper["ids"].append(node_id)
        wrapper["ids"].extend(node["ids"])  # :name:
        node["ids"] = []
        # the :caption: node itself is reused (translated in a translated edition): make gettext's catalog only
        # takes nodes that carry the uid the versioning transform gave them at read time
        cap = _take_caption(node)
        caption_text = cap.astext() if cap is not None else (
            f"{res.path}:{start}-{end}" if end != start else f"{res.path}:{start}")
        if cap is None:
            cap = nodes.caption(caption_text, "")
            cap.source, cap.line = node.source, node.line
        cap.children = []
        link = src_ref(caption_text, target=node["target"], auxiliary=True, style="plain")
        _store(link, res)
        link["start"], link["end"] = start, end
        link += nodes.Text(caption_text)
        cap += link
        wrapper += cap
        wrapper += literal
        node += wrapper
        node["resolved"] = True
        if truncated:
            full = FULL_SOURCE_TEXT if (self.config.language or "zh_CN").startswith("zh") else FULL_SOURCE_TEXT_EN
            more = src_ref(full, target=node["target"], auxiliary=True, style="plain")
            _store(more, res)
            more["end"] = full_end
            if focus:  # the full symbol, not just the focused tail
                more["start"] = res.start
            more += nodes.Text(full)
            para = nodes.paragraph("", "", classes=["src-excerpt-more"])
            para += more
            node += para
        return start, end


def _opted_out(node: nodes.Node) -> bool:
    p: nodes.Node | None = node
    while p is not None:
        if isinstance(p, nodes.Element):
            if OPT_OUT_CLASS in p.get("classes", ()):
                return True
            if isinstance(p, (src_ref, src_excerpt, nodes.comment, nodes.raw, nodes.system_message)):
                return True
        p = p.parent
    return False


def _line_of(node: nodes.Node) -> int | None:
    p: nodes.Node | None = node
    while p is not None:
        if getattr(p, "line", None):
            return p.line
        p = p.parent
    return None


class CheckUnmanaged(SphinxTransform):
    """Warn about raw ``file.py:123`` references in chapter text (read phase)."""

    default_priority = 885

    def apply(self, **kwargs: Any) -> None:
        prefix = self.config.vllm_book_browser_prefix.strip("/")
        docname = self.env.docname
        if prefix and (docname == prefix or docname.startswith(prefix + "/")):
            return
        for text in list(self.document.findall(nodes.Text)):
            hits = find_unmanaged(text.astext())
            if not hits or _opted_out(text):
                continue
            parent = text.parent
            base = _line_of(text)
            self.env.get_domain("src").note_failure(docname)  # type: ignore[attr-defined]
            for start, _end, raw in hits:
                line = base
                if isinstance(parent, nodes.literal_block) and base is not None:
                    line = base + text.astext().count("\n", 0, start) + 1
                logger.warning(
                    f'unmanaged source line "{raw}": use {{src}}`path::Symbol` (or a path::Symbol:"text" line anchor); '
                    f"for program output add the class {OPT_OUT_CLASS}",
                    type=WARNING_TYPE,
                    subtype="unmanaged",
                    location=(docname, line),
                )


class RenderAnchors(SphinxPostTransform):
    """Turn the placeholders into plain docutils nodes: text plus a link to the
    online edition's browser (EPUB, LaTeX/PDF, text, …, and HTML without a
    browser).  The HTML subclasses run first and link into the local browser."""

    default_priority = 6
    local_browser = False

    def run(self, **kwargs: Any) -> None:
        # HTML with the browser: relative links; HTML without it: the same
        # links, to the online edition; other formats: text + online link.
        mode = ("local" if self.config.vllm_book_browser else "online") if self.local_browser else "print"
        page = self.page(self.env.docname) if mode == "local" else ""
        for node in list(self.document.findall(src_excerpt)):
            node.replace_self(node.children or [])
        for node in list(self.document.findall(src_ref)):
            node.replace_self(self._render(node, mode, page))

    def page(self, docname: str) -> str:
        """Output path of *docname*'s page, relative to the output directory."""
        return docname + (self.config.html_file_suffix or ".html")

    def _url(self, node: nodes.Element) -> str:
        prefix = self.config.vllm_book_browser_prefix.strip("/")
        if node["kind"] == "dir":
            dest, frag = urls.dir_page(prefix, node["path"]), ""
        else:
            dest = urls.file_page(prefix, node["path"])
            frag = "" if node["kind"] == "file" else "#" + urls.line_fragment(node["start"], node["end"])
        return dest + frag

    def _render(self, node: src_ref, mode: str, page: str) -> nodes.Node:
        children = [c.deepcopy() for c in node.children]
        ids = list(node["ids"])
        if not node.get("resolved"):
            return nodes.inline("", "", *children, classes=["src-ref", "unresolved"], ids=ids)
        path, start, end, kind = node["path"], node["start"], node["end"], node["kind"]
        if kind == "dir":
            loc = path + "/"
        elif kind == "file":
            loc = path
        else:
            loc = f"{path}:{start}" if start == end else f"{path}:{start}-{end}"
        dest = self._url(node)
        classes = ["src-ref", f"src-{kind}"]
        online = self.config.vllm_book_online_base.rstrip("/") + "/" + dest
        if mode in ("local", "online"):
            if mode == "local":
                file_part, _, frag = dest.partition("#")
                uri = urls.relative(page, file_part) + (f"#{frag}" if frag else "")
            else:
                uri = online
            return nodes.reference("", "", *children, refuri=uri, reftitle=loc, internal=False, classes=classes, ids=ids)
        if node.get("style") == "plain" or not (node.get("explicit_title") or kind in ("symbol", "line")):
            # captions, "full source" links, and texts that already are the path
            return nodes.reference("", "", *children, refuri=online, classes=classes, ids=ids)
        pretty = loc.replace("-", "–") if kind in ("symbol", "line") else loc
        out = nodes.inline("", "", *children, classes=classes, ids=ids)
        out += nodes.Text(" (")
        out += nodes.reference(pretty, pretty, refuri=online, classes=["src-ref-location"])
        out += nodes.Text(")")
        return out


class RenderAnchorsHTML(RenderAnchors):
    builders = ("html",)
    default_priority = 5
    local_browser = True


class RenderAnchorsDirHTML(RenderAnchorsHTML):
    builders = ("dirhtml",)

    def page(self, docname: str) -> str:
        if docname == "index" or docname.endswith("/index"):
            return docname + ".html"
        return docname + "/index.html"


class RenderAnchorsSingleHTML(RenderAnchorsHTML):
    builders = ("singlehtml",)

    def page(self, docname: str) -> str:
        return (self.config.root_doc or "index") + ".html"


POST_TRANSFORMS = (RenderAnchorsHTML, RenderAnchorsDirHTML, RenderAnchorsSingleHTML, RenderAnchors)

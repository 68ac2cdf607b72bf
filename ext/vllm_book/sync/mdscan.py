"""A line-level scan of the book's MyST Markdown, without a Sphinx build.

``make validate`` and ``make impact`` need, for every page, where it cites
source (``{src}`` roles, ``src-code`` directives), where it writes raw
``file.py:123`` lines, which labels it defines and which it references,
its ``{doc}``/relative links, its Mermaid diagrams and its H1 — each with the
line of the ``.md`` file.  A Sphinx build knows all of this too, but costs
tens of seconds and reports lines of doctree nodes; this scanner costs
milliseconds per page.

What it understands (the subset of MyST the book uses):

* front matter (``---`` … ``---`` at the top);
* fences: backtick/tilde code fences and ``:::`` colon fences, nested, with
  directive options (``:key: value`` lines or a leading ``---`` YAML block);
  a fence is *literal* (code, ``mermaid``, ``math``, ``raw``…) or *Markdown*
  (admonitions, ``dropdown``, ``tab-item``…: their body is scanned as prose);
* ``(label)=`` targets and ``:name:`` options; ``%`` comment lines and
  ``<!-- … -->`` comments;
* inline roles ``{name}`text``` / ``{name}`title <target>```, code spans,
  ``[text](dest)`` links and images.

The unmanaged-line check follows the Sphinx side
(:class:`vllm_book.anchors.transforms.CheckUnmanaged`): prose, inline code
and code blocks are checked; ``{src}`` roles, ``src-code``, Mermaid, raw
HTML and comments are not; the ``no-src-check`` class opts an element out
(``:class: no-src-check`` on a directive, a ``{.no-src-check}`` block
attribute line before a block, `` `x.py:1`{.no-src-check} `` inline, or
``:::{container} no-src-check`` / ``:::{div} no-src-check``).  Roles and links are recognised within one line.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from .. import frontmatter
from ..anchors.lint import OPT_OUT_CLASS, find_unmanaged

SRC_ROLES = frozenset({"src", "src:ref"})
SRC_DIRECTIVES = frozenset({"src-code", "src:code"})
#: directives whose body is not Markdown
LITERAL_DIRECTIVES = frozenset({
    "code-block", "code", "sourcecode", "code-cell", "mermaid", "math", "raw", "literalinclude",
    "csv-table", "graphviz", "eval-rst", "src-code", "src:code", "track", "book-parts", "part-chapters",
    "toctree", "cli-transcript", "drill",
})  # fmt: skip
#: literal directives whose text is not checked for raw source lines (not Text in the doctree)
UNCHECKED_DIRECTIVES = frozenset({"mermaid", "raw", "src-code", "src:code", "eval-rst", "toctree"})
#: labels Sphinx defines itself
BUILTIN_LABELS = frozenset({"genindex", "modindex", "search", "py-modindex"})

_FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
_DIRECTIVE_INFO = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<args>.*)$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):(?:\s+(?P<value>.*))?$")
_LABEL = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
_ATTR_BLOCK = re.compile(r"^\s*\{(?P<attrs>[^{}]*)\}\s*$")
_H1 = re.compile(r"^#\s+(?P<title>.+?)\s*#*\s*$")
_H2 = re.compile(r"^##\s+(?P<title>.+?)\s*#*\s*$")
_ROLE = re.compile(r"\{(?P<name>[\w:.+-]+)\}(?P<ticks>`+)")
_TICKS = re.compile(r"`+")
_LINK = re.compile(r"(?P<bang>!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(?:<(?P<dest1>[^>]*)>|(?P<dest2>[^()\s]*(?:\([^()\s]*\)[^()\s]*)*))(?:\s+\"[^\"]*\")?\s*\)")
_INLINE_ATTR = re.compile(r"\{(?P<attrs>[^{}]*)\}")
_HTML_COMMENT = re.compile(r"<!--.*?-->")
_GITHUB_LINE = re.compile(r"https?://github\.com/[^\s)>\]]+/(?:blob|tree)/[^\s)>\]]+#L\d+[^\s)>\]]*")
_EXPLICIT_TARGET = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


@dataclasses.dataclass(frozen=True)
class Anchor:
    line: int
    target: str
    form: str  # "role" | "directive"
    raw: str
    #: a directive's options: key → (value, line)
    options: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict, compare=False, hash=False)


@dataclasses.dataclass(frozen=True)
class Reference:
    line: int
    kind: str  # "doc" | "ref" | "numref" | "link" | "image" | "label-link"
    target: str
    raw: str


@dataclasses.dataclass(frozen=True)
class Unmanaged:
    line: int
    col: int
    text: str


@dataclasses.dataclass(frozen=True)
class Diagram:
    line: int  # line of the opening fence
    first: int  # .md line of the diagram's first text line
    text: str


@dataclasses.dataclass(frozen=True)
class CodeBlock:
    """A literal code block: a plain fence or a ``{code-block}``/``{code}`` directive (for :mod:`.commands`)."""

    line: int  # line of the opening fence
    lang: str  # the fence's info word, or the directive's argument
    classes: frozenset[str]  # :class: option, or a {.class} block attribute line before the fence
    lines: tuple[tuple[int, str], ...]  # (.md line, text) of the body


@dataclasses.dataclass(frozen=True)
class Span:
    """A run of one line's prose text or one inline code span (role text is not a span)."""

    line: int
    text: str
    code: bool
    classes: frozenset[str]  # {.class} after the code span, or of the paragraph's block attribute


@dataclasses.dataclass
class Page:
    path: Path
    docname: str
    front_matter: dict
    chapter: bool = False
    front: frontmatter.FrontMatter = dataclasses.field(default_factory=lambda: frontmatter.FrontMatter({}))
    h1: tuple[str, int] | None = None
    h2: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)  # (title, line, dropdowns inside)
    n_lines: int = 0
    anchors: list[Anchor] = dataclasses.field(default_factory=list)
    references: list[Reference] = dataclasses.field(default_factory=list)
    labels: dict[str, int] = dataclasses.field(default_factory=dict)
    unmanaged: list[Unmanaged] = dataclasses.field(default_factory=list)
    diagrams: list[Diagram] = dataclasses.field(default_factory=list)
    code_blocks: list[CodeBlock] = dataclasses.field(default_factory=list)
    spans: list[Span] = dataclasses.field(default_factory=list)
    problems: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)  # (line, message, fix)


@dataclasses.dataclass
class _Fence:
    char: str
    count: int
    line: int
    name: str  # directive name, "" for a plain code fence
    literal: bool
    checked: bool  # raw source lines are checked in its body
    opted_out: bool
    body: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    options_done: bool = False
    in_yaml: bool = False
    yaml_done: bool = False
    lang: str = ""
    classes: set[str] = dataclasses.field(default_factory=set)
    title: tuple[int, str] | None = None  # the argument of a Markdown directive (an admonition's title)
    anchor: Anchor | None = None  # a src-code directive's anchor (gets the options)


def _classes(attrs: str) -> list[str]:
    return [a[1:] for a in attrs.split() if a.startswith(".")]


def _explicit(text: str) -> tuple[str, str]:
    m = _EXPLICIT_TARGET.match(text.strip())
    if m and m.group("title"):
        return m.group("title"), m.group("target").strip()
    return "", text.strip()


def scan(path: Path, source_dir: Path, *, chapter: bool = False) -> Page:
    """Scan one Markdown file of the book (``chapter``: its front matter is shown on the page)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    docname = path.relative_to(source_dir).with_suffix("").as_posix()
    page = Page(path, docname, {}, chapter=chapter, n_lines=len(lines))
    i = 0
    fm = page.front = frontmatter.parse(text)  # the parser the build's header card uses
    page.front_matter = fm.data
    if fm.end > fm.start:
        if chapter:
            for n in range(1, fm.end - 1):
                _check_unmanaged(page, n + 1, lines[n])
        i = fm.end
    stack: list[_Fence] = []
    opt_out_next = False  # a {.no-src-check} block attribute applies to the next block
    para_opted_out = False
    classes_next: set[str] = set()  # the classes of a {.a .b} block attribute line, for the next block
    para_classes: frozenset[str] = frozenset()
    in_comment = False
    for n in range(i, len(lines)):
        lineno = n + 1
        line = lines[n]
        top = stack[-1] if stack else None
        # -- inside a literal fence: only look for its end
        m = _FENCE_OPEN.match(line)
        if top is not None and m and m.group("fence")[0] == top.char and len(m.group("fence")) >= top.count \
                and not m.group("info").strip():
            if top.title is not None:
                _emit_title(page, top, stack)
            stack.pop()
            _close(page, top)
            continue
        if top is not None and top.literal:
            if top.name and not top.options_done:
                if _directive_option(page, top, lineno, line):
                    continue
            top.body.append((lineno, line))
            if top.checked and not top.opted_out:
                _check_unmanaged(page, lineno, line)
            continue
        if top is not None and top.name and not top.options_done:
            if _directive_option(page, top, lineno, line):
                continue
        if top is not None and top.title is not None:
            _emit_title(page, top, stack)
        opted = any(f.opted_out for f in stack)
        inherited = frozenset(c for f in stack if not f.literal for c in f.classes)
        # -- HTML comments (may span lines)
        if in_comment:
            if "-->" in line:
                in_comment = False
                line = line.split("-->", 1)[1]
            else:
                continue
        if "<!--" in line:
            line = _HTML_COMMENT.sub(lambda m: " " * len(m.group(0)), line)
            if "<!--" in line:
                line = line.split("<!--", 1)[0]
                in_comment = True
        stripped = line.strip()
        if not stripped:
            para_opted_out = False
            para_classes = frozenset()
            continue
        if stripped.startswith("%"):
            continue
        if m:
            info = m.group("info").strip()
            fence = m.group("fence")
            if fence[0] == "`" and "`" in info:
                pass  # not a fence: inline code at the start of a line
            else:
                dm = _DIRECTIVE_INFO.match(info)
                if dm:
                    name = dm.group("name")
                    args = dm.group("args").strip()
                    literal = name in LITERAL_DIRECTIVES
                    if name == "dropdown" and page.h2:  # 自检 questions (vllm_book.template)
                        title, h2_line, n_dropdowns = page.h2[-1]
                        page.h2[-1] = (title, h2_line, n_dropdowns + 1)
                    f = _Fence(fence[0], len(fence), lineno, name, literal, name not in UNCHECKED_DIRECTIVES,
                               opt_out_next or (name in ("div", "container") and OPT_OUT_CLASS in args.split()),
                               lang=args.split()[0] if args else "", classes=set(classes_next))
                    if not literal and args and name not in PATH_DIRECTIVES:
                        f.title = (lineno, args)
                    if name in SRC_DIRECTIVES:
                        f.anchor = Anchor(lineno, args, "directive", line.strip())
                        page.anchors.append(f.anchor)
                    elif not opted and not f.opted_out and name not in ("mermaid", "raw"):
                        _check_unmanaged(page, lineno, args, col0=line.find(args) if args else 0)
                else:
                    lang = info.split()[0] if info else ""
                    f = _Fence(fence[0], len(fence), lineno, "", True, True, opt_out_next or opted, options_done=True,
                               lang=lang, classes=set(classes_next))
                    if lang == "mermaid":
                        page.problems.append((lineno, "a ```mermaid fence renders as a code block, not a diagram",
                                              "write the fence as ```{mermaid}"))
                if opted:
                    f.opted_out = True
                opt_out_next = False
                classes_next = set()
                stack.append(f)
                continue
        am = _ATTR_BLOCK.match(line)
        if am and not stripped.startswith("{{"):
            if OPT_OUT_CLASS in _classes(am.group("attrs")):
                opt_out_next = True
            classes_next = set(_classes(am.group("attrs")))
            continue
        if opt_out_next:
            para_opted_out = True
            opt_out_next = False
        if classes_next:
            para_classes = frozenset(classes_next)
            classes_next = set()
        lm = _LABEL.match(line)
        if lm:
            _label(page, lm.group("label"), lineno)
            continue
        if page.h1 is None and not stack:
            hm = _H1.match(line)
            if hm:
                page.h1 = (hm.group("title").strip(), lineno)
        if not stack:
            hm = _H2.match(line)
            if hm:
                page.h2.append((hm.group("title").strip(), lineno, 0))
        _scan_inline(page, lineno, line, opted or para_opted_out, para_classes | inherited)
    for f in reversed(stack):
        page.problems.append((f.line, f"the fence opened here ({f.char * f.count}{'{' + f.name + '}' if f.name else ''}) is never closed",
                              f"close it with a line of {f.char * f.count}"))
        _close(page, f)
    page.unmanaged.sort(key=lambda u: (u.line, u.col))
    return page


def _directive_option(page: Page, f: _Fence, lineno: int, line: str) -> bool:
    """Consume an option line of directive *f*; ``False`` when its body starts."""
    s = line.strip()
    if not f.body and not f.yaml_done and not f.in_yaml and s == "---":
        f.in_yaml = True
        return True
    if f.in_yaml:
        if s == "---":
            f.in_yaml = False
            f.yaml_done = True
            f.options_done = True
            return True
        _option(page, f, lineno, line)
        return True
    om = _OPTION.match(line)
    if om and not f.yaml_done:
        _option(page, f, lineno, line)
        return True
    f.options_done = True
    return False


def _option(page: Page, f: _Fence, lineno: int, line: str) -> None:
    om = _OPTION.match(line) or re.match(r"^\s*(?P<key>[\w-]+):\s*(?P<value>.*)$", line)
    if not om:
        return
    key, value = om.group("key"), (om.group("value") or "").strip()
    if key == "class":
        f.classes.update(value.split())
    if f.anchor is not None:
        f.anchor.options.setdefault(key, (value, lineno))
    if key == "class" and OPT_OUT_CLASS in value.split():
        f.opted_out = True
    elif key == "name" and value:
        _label(page, value, lineno)
    elif key == "caption" and f.checked and not f.opted_out:
        _check_unmanaged(page, lineno, line)


def _label(page: Page, label: str, lineno: int) -> None:
    key = label.lower()
    if key in page.labels:
        page.problems.append((lineno, f"label ({label}) is already defined at line {page.labels[key]} of this page",
                              "give one of them another name"))
    else:
        page.labels[key] = lineno


CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode"})
#: Markdown directives whose argument is a path, not text
PATH_DIRECTIVES = frozenset({"figure", "image", "include", "card-carousel", "container", "div"})


def _emit_title(page: Page, f: _Fence, stack: list[_Fence]) -> None:
    """The directive's argument as a prose span, with the classes of it and of the directives around it."""
    assert f.title is not None
    lineno, text = f.title
    f.title = None
    classes = frozenset(c for g in stack if not g.literal for c in g.classes)
    page.spans.append(Span(lineno, text, False, classes))


def _close(page: Page, f: _Fence) -> None:
    if f.literal and (not f.name or f.name in CODE_DIRECTIVES):
        page.code_blocks.append(CodeBlock(f.line, f.lang, frozenset(f.classes), tuple(f.body)))
    if f.name == "mermaid" and f.body:
        first = f.body[0][0]
        page.diagrams.append(Diagram(f.line, first, "\n".join(t for _n, t in f.body)))
    elif f.name == "mermaid":
        page.problems.append((f.line, "empty Mermaid diagram", "write the diagram or remove the fence"))


def _check_unmanaged(page: Page, lineno: int, text: str, col0: int = 0) -> None:
    for start, _end, raw in find_unmanaged(text):
        page.unmanaged.append(Unmanaged(lineno, col0 + start, raw))


def _closing_ticks(line: str, start: int, n: int) -> int:
    """Start of the first run of exactly *n* backticks at or after *start* (-1: none)."""
    for m in _TICKS.finditer(line, start):
        if len(m.group(0)) == n:
            return m.start()
    return -1


def _scan_inline(page: Page, lineno: int, line: str, opted_out: bool, classes: frozenset[str] = frozenset()) -> None:
    """Roles, code spans and links of one line of prose (*classes*: of the paragraph, for its spans)."""
    pos = 0
    plain: list[tuple[int, str]] = []  # (col, text) checked for raw source lines
    code_cols: set[int] = set()  # cols in *plain* that start a code span or an attributed [span]
    n = len(line)
    seg_start = 0
    while pos < n:
        c = line[pos]
        if c == "{":
            rm = _ROLE.match(line, pos)
            if rm:
                ticks = rm.group("ticks")
                end = _closing_ticks(line, rm.end(), len(ticks))
                if end != -1:
                    plain.append((seg_start, line[seg_start:pos]))
                    _role(page, lineno, rm.group("name"), line[rm.end():end], line[pos:end + len(ticks)], opted_out,
                          pos)
                    pos = end + len(ticks)
                    seg_start = pos
                    continue
        elif c == "`":
            tm = _TICKS.match(line, pos)
            assert tm is not None
            ticks = tm.group(0)
            end = _closing_ticks(line, tm.end(), len(ticks))
            if end == -1:
                pos = tm.end()
                continue
            after = end + len(ticks)
            am = _INLINE_ATTR.match(line, after)
            plain.append((seg_start, line[seg_start:pos]))
            span_classes = classes | frozenset(_classes(am.group("attrs")) if am else ())
            page.spans.append(Span(lineno, line[tm.end():end], True, span_classes))
            code_cols.add(tm.end())
            if not (am and OPT_OUT_CLASS in _classes(am.group("attrs"))):
                plain.append((tm.end(), line[tm.end():end]))
            pos = am.end() if am else after
            seg_start = pos
            continue
        elif c == "[" or (c == "!" and line[pos + 1:pos + 2] == "["):
            lm = _LINK.match(line, pos)
            if lm:
                dest = (lm.group("dest1") if lm.group("dest1") is not None else lm.group("dest2")) or ""
                plain.append((seg_start, line[seg_start:pos]))
                text_col = pos + line[pos:].find("[") + 1
                _scan_inline_text(page, lineno, lm.group("text"), opted_out, text_col, plain, classes)
                _link(page, lineno, dest, bool(lm.group("bang")), lm.group(0), opted_out, lm.end("text") + 2)
                pos = lm.end()
                seg_start = pos
                continue
            # [text]{.no-src-check} spans
            close = line.find("]", pos)
            if close != -1:
                am = _INLINE_ATTR.match(line, close + 1)
                if am and _classes(am.group("attrs")):
                    span_classes = frozenset(_classes(am.group("attrs")))
                    plain.append((seg_start, line[seg_start:pos]))
                    page.spans.append(Span(lineno, line[pos + 1:close], False, classes | span_classes))
                    if OPT_OUT_CLASS not in span_classes:
                        plain.append((pos + 1, line[pos + 1:close]))  # still checked for raw source lines
                        code_cols.add(pos + 1)
                    pos = am.end()
                    seg_start = pos
                    continue
        pos += 1
    plain.append((seg_start, line[seg_start:]))
    # prose runs, for the name checks of .commands (code spans were added above, in order of appearance)
    for c, t in plain:
        if t.strip() and c not in code_cols:
            page.spans.append(Span(lineno, t, False, classes))
    if not opted_out:
        for col, text in plain:
            _check_unmanaged(page, lineno, text, col)


def _scan_inline_text(page: Page, lineno: int, text: str, opted_out: bool, col: int,
                      plain: list[tuple[int, str]], classes: frozenset[str] = frozenset()) -> None:
    """Link text may hold roles and code spans: scan it as a nested line."""
    sub = Page(page.path, page.docname, {})
    _scan_inline(sub, lineno, text, opted_out, classes)
    page.spans.extend(sub.spans)
    page.anchors.extend(sub.anchors)
    page.references.extend(sub.references)
    page.unmanaged.extend(Unmanaged(u.line, u.col + col, u.text) for u in sub.unmanaged)


def _role(page: Page, lineno: int, name: str, body: str, raw: str, opted_out: bool, col: int) -> None:
    if name in SRC_ROLES:
        _title, target = _explicit(body)
        page.anchors.append(Anchor(lineno, target, "role", raw))
        return
    if name in ("doc", "ref", "numref"):
        _title, target = _explicit(body)
        page.references.append(Reference(lineno, name, target, raw))
        return
    # any other role: its text is Text in the doctree
    if not opted_out and name not in ("math",):
        for start, _end, r in find_unmanaged(body):
            page.unmanaged.append(Unmanaged(lineno, col + start, r))


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _link(page: Page, lineno: int, dest: str, image: bool, raw: str, opted_out: bool, col: int = 0) -> None:
    if not dest:
        return
    if dest.startswith(("project:", "path:")):
        dest = dest.split(":", 1)[1]
    elif _SCHEME.match(dest):
        if not opted_out:
            for m in _GITHUB_LINE.finditer(dest):
                page.unmanaged.append(Unmanaged(lineno, col + m.start(), m.group(0)))
        return
    if dest.startswith("#"):
        page.references.append(Reference(lineno, "label-link", dest[1:], raw))
        return
    page.references.append(Reference(lineno, "image" if image else "link", dest, raw))


def scan_book(source_dir: Path, is_chapter=lambda docname: False) -> list[Page]:
    """Every ``.md`` page under *source_dir* (``_build``/``_static``… excluded), sorted."""
    pages = []
    for md in sorted(source_dir.rglob("*.md")):
        rel = md.relative_to(source_dir)
        if any(part.startswith(("_", ".")) or part == "downloads" for part in rel.parts[:-1]):
            continue  # _static, _data…; downloads/: files a reader downloads, excluded from the build (conf.py)
        docname = rel.with_suffix("").as_posix()
        pages.append(scan(md, source_dir, chapter=is_chapter(docname)))
    return pages

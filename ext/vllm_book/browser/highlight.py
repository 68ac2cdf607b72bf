"""Compact Pygments highlighting for the source browser (no Sphinx imports).

The browser does not use Pygments' ``HtmlFormatter``: it lexes a file into
*runs* — ``(short class, text)`` pairs, one list per line, adjacent tokens of
the same class merged — and :func:`render_line` turns one line's runs into
HTML, merging the index's cross-references into the stream by column.  Only
styled tokens get a ``<span class=x>``; names, operators, punctuation and
whitespace are bare (escaped) text.  Gzipped, the highlighted code of the
whole tree is ~1.13× the source; refs, symbol anchors, outline and page
chrome bring the median page to ~1.7× its source file.

Lexing is the expensive part (Pygments' regex lexers), so :func:`lex_cached`
stores the runs of each file in the cache directory keyed by the file's
sha256, the lexer and :data:`HL_VERSION`; the runs are independent of refs,
citations and templates, so a page whose template or links change is
re-rendered without lexing again.

HTML escaping: every text run goes through :func:`esc` (``&``, ``<``,
``>``); attribute values through :func:`attr` (quoted and fully escaped
unless they are plain identifier characters).  Source text never lands in a
``<script>`` or a comment, so ``</script>``, ``<!--`` or ``]]>`` in a file
are plain text.
"""

from __future__ import annotations

import marshal
import os
import re
import tempfile
import zlib
from pathlib import Path

from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    String,
    Token,
    _TokenType,
)

#: bump when the class mapping or the run layout changes (invalidates the cache)
HL_VERSION = 2

#: token type → short CSS class ("" = unstyled, no span).  The most specific
#: entry wins (the lookup walks up ``ttype.parent``).
TOKEN_CLASSES: dict[_TokenType, str] = {
    Keyword: "k",
    Keyword.Type: "t",
    Operator.Word: "w",
    String: "s",
    String.Doc: "q",
    Comment: "c",
    Comment.Preproc: "p",
    Comment.PreprocFile: "s",
    Number: "m",
    Name.Builtin: "b",
    Name.Builtin.Pseudo: "",  # self / cls: far too frequent to be worth a span
    Name.Function: "f",
    Name.Class: "n",
    Name.Decorator: "d",
    Name.Exception: "e",
    Error: "",
    Token: "",
}

#: short class → the token type whose style it takes (for the CSS)
CLASS_STYLE_FROM: dict[str, _TokenType] = {
    "k": Keyword,
    "t": Keyword.Type,
    "w": Operator.Word,
    "s": String,
    "q": String.Doc,
    "c": Comment,
    "p": Comment.Preproc,
    "m": Number,
    "b": Name.Builtin,
    "f": Name.Function,
    "n": Name.Class,
    "d": Name.Decorator,
    "e": Name.Exception,
}

_CLASS_CACHE: dict[_TokenType, str] = {}


def token_class(ttype: _TokenType) -> str:
    try:
        return _CLASS_CACHE[ttype]
    except KeyError:
        pass
    t = ttype
    while t not in TOKEN_CLASSES:
        t = t.parent
    _CLASS_CACHE[ttype] = cls = TOKEN_CLASSES[t]
    return cls


# --------------------------------------------------------------------------
# lexers

_CPP_LEXER_BY_EXT = {"cu": "cuda", "cuh": "cuda", "c": "c"}


def lexer_name(path: str, lang: str) -> str:
    """``python`` | ``cuda`` | ``c`` | ``cpp`` | ``text`` (no highlighting)."""
    if lang == "python":
        return "python"
    if lang == "cpp":
        ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
        return _CPP_LEXER_BY_EXT.get(ext, "cpp")
    return "text"


_LEXERS: dict[str, object] = {}


def get_lexer(name: str):
    lx = _LEXERS.get(name)
    if lx is None:
        opts = {"stripnl": False, "ensurenl": True, "tabsize": 0}
        if name == "python":
            from pygments.lexers.python import PythonLexer as cls
        elif name == "cuda":
            from pygments.lexers.c_like import CudaLexer as cls
        elif name == "c":
            from pygments.lexers.c_cpp import CLexer as cls
        else:
            from pygments.lexers.c_cpp import CppLexer as cls
        lx = _LEXERS[name] = cls(**opts)
    return lx


def normalize(text: str) -> str:
    """Line ends as Pygments sees them (``\\r\\n`` and ``\\r`` → ``\\n``)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text


Runs = tuple  # ("k", "def", "", " foo", …) — alternating class, text


def lex(text: str, lexer: str) -> list[Runs]:
    """The runs of every line of *text* (``result[0]`` is line 1)."""
    text = normalize(text)
    if not text:
        return []
    if lexer == "text":
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [("", ln) if ln else () for ln in lines]
    bom = text.startswith("\ufeff")
    lines: list[Runs] = []
    cur: list[str] = []
    last_cls = None
    for ttype, value in get_lexer(lexer).get_tokens(text):
        cls = _CLASS_CACHE.get(ttype)
        if cls is None:
            cls = token_class(ttype)
        if "\n" in value:
            parts = value.split("\n")
            for i, part in enumerate(parts):
                if i:
                    lines.append(tuple(cur))
                    cur = []
                    last_cls = None
                if part:
                    if cls == last_cls:
                        cur[-1] += part
                    else:
                        cur.append(cls)
                        cur.append(part)
                        last_cls = cls
        elif value:
            if cls == last_cls:
                cur[-1] += value
            else:
                cur.append(cls)
                cur.append(value)
                last_cls = cls
    if cur:
        lines.append(tuple(cur))
    if bom and lines:  # Pygments drops a BOM; keep columns as the indexer counts them
        lines[0] = ("", "\ufeff", *lines[0])
    return lines


def cache_file(cache_dir: str | os.PathLike, sha256: str, lexer: str) -> Path:
    """Where the runs of a file with this content are cached."""
    return Path(cache_dir) / sha256[:2] / f"{sha256}.{lexer}.v{HL_VERSION}"


def lex_cached(text: str, lexer: str, sha256: str, cache_dir: str | os.PathLike | None) -> tuple[list[Runs], bool]:
    """(runs, lexed) — *lexed* False when the runs came from the cache."""
    if lexer == "text" or not cache_dir:
        return lex(text, lexer), lexer != "text"
    path = cache_file(cache_dir, sha256, lexer)
    try:
        return marshal.loads(zlib.decompress(path.read_bytes())), False
    except (OSError, ValueError, EOFError, TypeError, zlib.error):
        pass
    runs = lex(text, lexer)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(zlib.compress(marshal.dumps(runs), 1))
        os.replace(tmp, path)
    except OSError:
        pass
    return runs, True


# --------------------------------------------------------------------------
# HTML


def esc(s: str) -> str:
    """Escape text content (``&``, ``<``, ``>``; quotes need no escaping there)."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PLAIN_ATTR = re.compile(r"[A-Za-z0-9_.~:/#-]+")


def attr(value: str) -> str:
    """An attribute value: bare when it is plain characters, else quoted and escaped."""
    if _PLAIN_ATTR.fullmatch(value):
        return value
    return '"' + value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;") + '"'


def render_line(runs: Runs, refs: list[tuple[int, int, str]] | None = None) -> str:
    """HTML of one line.

    *refs*: ``(col, end_col, href_html)`` sorted, non-overlapping, with
    *href_html* already an attribute value (see :func:`attr`).  A ref may
    cover several runs or part of one; runs are split at ref boundaries so
    the ``<a>`` and the ``<span>`` elements always nest.
    """
    out: list[str] = []
    app = out.append
    if not refs:
        for i in range(0, len(runs), 2):
            cls = runs[i]
            if cls:
                app(f"<span class={cls}>{esc(runs[i + 1])}</span>")
            else:
                app(esc(runs[i + 1]))
        return "".join(out)
    nref = len(refs)
    ri = 0
    open_end = -1
    pos = 0
    for i in range(0, len(runs), 2):
        cls = runs[i]
        text = runs[i + 1]
        tend = pos + len(text)
        p = pos
        while p < tend:
            if open_end < 0:
                while ri < nref and refs[ri][0] < p:  # overlapping/stale ref: skip
                    ri += 1
                if ri < nref and refs[ri][0] == p:
                    app(f"<a href={refs[ri][2]}>")
                    open_end = refs[ri][1]
                    ri += 1
            if open_end >= 0:
                cut = open_end
            elif ri < nref:
                cut = refs[ri][0]
            else:
                cut = tend
            if cut > tend or cut <= p:
                cut = tend
            piece = esc(text[p - pos : cut - pos])
            app(f"<span class={cls}>{piece}</span>" if cls else piece)
            p = cut
            if open_end >= 0 and p >= open_end:
                app("</a>")
                open_end = -1
        pos = tend
    if open_end >= 0:
        app("</a>")
    return "".join(out)


def style_css(
    style_name: str, scope: str, fallbacks: tuple[str, ...] = ("default",), *, complete: bool = False
) -> tuple[str, str, str]:
    """(rules, background, foreground) for the short classes from a Pygments style.

    Each rule is prefixed with *scope* (e.g. ``html[data-theme=dark] .code``).
    *complete* rules also reset what the style leaves unset (colour, weight,
    slant, underline), so a dark style never inherits the light one's.
    """
    from pygments.styles import get_style_by_name
    from pygments.util import ClassNotFound

    style = None
    for name in (style_name, *fallbacks):
        try:
            style = get_style_by_name(name)
            break
        except ClassNotFound:
            continue
    if style is None:  # pragma: no cover - "default" always exists
        raise RuntimeError(f"no Pygments style {style_name!r}")
    rules = []
    for cls, ttype in CLASS_STYLE_FROM.items():
        st = style.style_for_token(ttype)
        decl = []
        if st["color"]:
            decl.append(f"color:#{st['color']}")
        elif complete:
            decl.append("color:inherit")
        if st["bold"] or complete:
            decl.append("font-weight:" + ("bold" if st["bold"] else "normal"))
        if st["italic"] or complete:
            decl.append("font-style:" + ("italic" if st["italic"] else "normal"))
        if st["underline"] or complete:
            decl.append("text-decoration:" + ("underline" if st["underline"] else "none"))
        if decl:
            rules.append(f"{scope} .{cls}{{{';'.join(decl)}}}")
    base = style.style_for_token(Token.Text)
    fg = f"#{base['color']}" if base["color"] else ""
    bg = style.background_color or ""
    return "\n".join(rules), bg, fg

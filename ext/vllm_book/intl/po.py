"""A gettext ``.po`` reader that keeps line numbers and fails on a broken line (no Sphinx imports).

The catalog gate (:mod:`vllm_book.sync.catalogs`) must point a translator at the exact line of a catalog, and
the build's coverage counter (:mod:`.coverage`) must read the same entries Sphinx compiles into ``.mo``
(babel's ``write_mo`` leaves fuzzy and empty entries out).  Babel's own reader either swallows a broken line
or raises without the entry's keyword, so this module reads the format itself — it is small:

- comments: ``#`` (translator), ``#.`` (extracted), ``#:`` (references), ``#,`` (flags), ``#|`` (previous);
  ``#~`` marks an obsolete entry, which is kept apart and never counts;
- keywords ``msgctxt``, ``msgid``, ``msgid_plural``, ``msgstr``, ``msgstr[n]``, each followed by a quoted
  string and continuation lines that are quoted strings;
- the C escapes gettext writes: ``\\n \\t \\r \\" \\\\``.

A line that is none of these raises :class:`POError` with the file, the line and the fix.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

_KEYWORD = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(".*)$')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class POError(ValueError):
    def __init__(self, path: Path, line: int, message: str, fix: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message, self.fix = path, line, message, fix


@dataclasses.dataclass
class Entry:
    """One message: where its ``msgid`` keyword is, its strings and flags."""

    line: int
    msgid: str = ""
    msgstr: str = ""
    msgctxt: str | None = None
    plural: str | None = None
    plural_strs: dict[int, str] = dataclasses.field(default_factory=dict)
    flags: set[str] = dataclasses.field(default_factory=set)
    references: list[str] = dataclasses.field(default_factory=list)
    obsolete: bool = False
    msgstr_line: int = 0

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags

    @property
    def header(self) -> bool:
        return self.msgid == "" and self.msgctxt is None

    @property
    def translated(self) -> bool:
        """What Sphinx's compiled catalog uses: not fuzzy, not empty (``.mo`` leaves both out)."""
        return bool(self.msgstr.strip()) and not self.fuzzy and not self.obsolete


@dataclasses.dataclass
class Catalog:
    path: Path
    entries: list[Entry]

    def messages(self) -> list[Entry]:
        """The live entries (no header, no obsolete ``#~`` ones)."""
        return [e for e in self.entries if not e.header and not e.obsolete]

    def translations(self) -> dict[str, str]:
        """msgid → msgstr for what ships (Sphinx's lookup)."""
        return {e.msgid: e.msgstr for e in self.messages() if e.translated and e.msgctxt is None}


def unquote(text: str, path: Path, line: int) -> str:
    """The value of one gettext string literal ``"..."`` (the whole of *text*, stripped)."""
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise POError(path, line, f"expected a quoted string, found {text[:40]!r}",
                      'each msgid/msgstr line holds one string in double quotes: msgstr "…"')
    out, body, i = [], text[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            if i + 1 >= len(body) or body[i + 1] not in _ESCAPES:
                raise POError(path, line, f"unknown escape {body[i:i + 2]!r} in a string",
                              r'write a backslash as \\ and a double quote as \"')
            out.append(_ESCAPES[body[i + 1]])
            i += 2
            continue
        if ch == '"':
            raise POError(path, line, "an unescaped double quote ends the string early",
                          r'escape a double quote inside a message as \"')
        out.append(ch)
        i += 1
    return "".join(out)


def parse(text: str, path: Path) -> Catalog:
    entries: list[Entry] = []
    cur: Entry | None = None
    field: str | None = None  # the keyword the next continuation line extends
    pending_flags: set[str] = set()
    pending_refs: list[str] = []

    def finish() -> None:
        nonlocal cur, field
        if cur is not None:
            if cur.msgstr_line == 0 and not cur.plural_strs:
                raise POError(path, cur.line, "msgid without a msgstr",
                              'add msgstr "" after the msgid (an empty msgstr means untranslated)')
            entries.append(cur)
        cur, field = None, None

    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        obsolete = False
        if line.startswith("#~"):
            obsolete, line = True, line[2:].strip()
            if not line or line.startswith("#"):
                continue
        elif line.startswith("#"):
            if cur is not None and field is not None and cur.msgstr_line:
                finish()
            if line.startswith("#,"):
                pending_flags |= {f.strip() for f in line[2:].split(",") if f.strip()}
            elif line.startswith("#:"):
                pending_refs.extend(line[2:].split())
            continue
        if not line:
            if cur is not None and cur.msgstr_line:
                finish()
            continue
        m = _KEYWORD.match(line)
        if m:
            kw, idx, rest = m.group(1), m.group(2), m.group(3)
            value = unquote(rest, path, no)
            starts = (kw == "msgctxt" and (cur is None or cur.msgstr_line or cur.msgctxt is not None)) or (
                kw == "msgid" and (cur is None or cur.msgstr_line or field != "msgctxt"))
            if starts:
                finish()
                cur = Entry(line=no, flags=pending_flags, references=pending_refs, obsolete=obsolete)
                pending_flags, pending_refs = set(), []
            if cur is None:
                raise POError(path, no, f"{kw} before any msgid", "start each entry with msgid \"…\"")
            if kw == "msgctxt":
                cur.msgctxt = value
            elif kw == "msgid":
                cur.line, cur.msgid = no, value
            elif kw == "msgid_plural":
                cur.plural = value
            elif idx is not None:
                cur.plural_strs[int(idx)] = value
                cur.msgstr_line = cur.msgstr_line or no
                if int(idx) == 0:
                    cur.msgstr = value
            else:
                if cur.msgstr_line:
                    raise POError(path, no, "a second msgstr for one msgid",
                                  "each msgid has exactly one msgstr; merge the two or start a new entry with msgid")
                cur.msgstr, cur.msgstr_line = value, no
            field = kw if idx is None else f"msgstr[{idx}]"
            continue
        if line.startswith('"'):
            if cur is None or field is None:
                raise POError(path, no, "a continuation string outside any entry",
                              "a line that is only a quoted string continues the msgid/msgstr above it; "
                              "put it right after one")
            value = unquote(line, path, no)
            if field == "msgctxt":
                cur.msgctxt = (cur.msgctxt or "") + value
            elif field == "msgid":
                cur.msgid += value
            elif field == "msgid_plural":
                cur.plural = (cur.plural or "") + value
            elif field.startswith("msgstr["):
                i = int(field[7:-1])
                cur.plural_strs[i] += value
                if i == 0:
                    cur.msgstr += value
            else:
                cur.msgstr += value
            continue
        raise POError(path, no, f"not a gettext line: {line[:60]!r}",
                      'every line is a comment (#…), a keyword with a string (msgid "…", msgstr "…"), '
                      'a continuation string ("…") or blank; quote the text or delete the line')
    finish()
    return Catalog(path, entries)


def read(path: Path) -> Catalog:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = Path(path).read_bytes()[: exc.start].count(b"\n") + 1
        raise POError(Path(path), line, "the catalog is not UTF-8", "save the .po file as UTF-8") from None
    return parse(text, Path(path))


_CACHE: dict[Path, tuple[float, int, Catalog]] = {}


def cached(path: Path) -> Catalog:
    """:func:`read`, memoised on the file's mtime and size (the build reads each catalog once per process)."""
    st = Path(path).stat()
    hit = _CACHE.get(Path(path))
    if hit and hit[0] == st.st_mtime and hit[1] == st.st_size:
        return hit[2]
    cat = read(path)
    _CACHE[Path(path)] = (st.st_mtime, st.st_size, cat)
    return cat

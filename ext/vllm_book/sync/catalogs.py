"""The catalog gate of ``make validate``: translations keep their markup, nothing fuzzy ships, English is spelt.

It follows what the Python docs translation projects run on their catalogs (sphinx-lint for the markup,
pospell for the spelling), for the book's own markup.  For every ``locale/<lang>/LC_MESSAGES/**/*.po``:

- the file parses (:mod:`vllm_book.intl.po`): a broken line is an error at that line, with the fix;
- no entry is fuzzy: ``make intl-update`` marks an entry fuzzy when its Chinese text changed; Sphinx leaves it
  out of the build, so the page silently falls back to Chinese — the translator updates it and drops the flag;
- every translated ``msgstr`` keeps its ``msgid``'s ``{src}``/``{doc}``/``{ref}`` targets, inline code, math,
  substitutions and link destinations (:mod:`vllm_book.intl.markup`), unchanged and none lost;
- every translated Mermaid diagram parses with the pinned Mermaid;
- for ``en``, the words of the translation are in the dictionary or the project word list
  (:mod:`vllm_book.intl.spelling`, ``locale/en/wordlist.txt``).

Problems carry ``check = "catalogs"``.  The figures (messages, translated, fuzzy per catalog) feed the report.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ..intl import markup, po, spelling
from ..problems import Problem
from .common import rel

LOCALE_DIR = "locale"


@dataclasses.dataclass
class Figures:
    catalogs: int = 0
    messages: int = 0
    translated: int = 0
    fuzzy: int = 0


def catalog_files(root: Path) -> list[tuple[str, Path]]:
    base = root / LOCALE_DIR
    if not base.is_dir():
        return []
    return [(lang.name, f) for lang in sorted(base.iterdir()) if (lang / "LC_MESSAGES").is_dir()
            for f in sorted((lang / "LC_MESSAGES").rglob("*.po"))]


def check_entry(file: str, entry: po.Entry, words: frozenset[str] | None) -> list[Problem]:
    """The problems of one entry; *words* is the spelling word list (``None``: not an English catalog)."""
    out: list[Problem] = []
    if entry.fuzzy:
        out.append(Problem(file, entry.line, "fuzzy entry: its Chinese text changed since it was translated, so "
                           "the build leaves it out and the page shows Chinese here",
                           "compare the msgstr with the new msgid, update it, then delete 'fuzzy' from the #, line "
                           "above (or empty the msgstr)", "catalogs"))
        return out
    if not entry.translated:
        return out
    line = entry.msgstr_line or entry.line
    if entry.msgid.endswith("\n") != entry.msgstr.endswith("\n"):  # what msgfmt --check reports too
        out.append(Problem(file, line, f"the msgid at line {entry.line} {'ends' if entry.msgid.endswith(chr(10)) else 'does not end'} "
                           "with a line break and its msgstr does not match",
                           "end the msgstr the way its msgid ends (a final \\n, or none)", "catalogs"))
    for problem in markup.compare(entry.msgid, entry.msgstr):
        out.append(Problem(file, line, f"msgstr of the msgid at line {entry.line}: {problem}",
                           "copy the markup from the msgid unchanged (translate only the prose and link text: "
                           "{src}`English text <same target>`)", "catalogs"))
    # spelling is for prose: a message kept as it is (a formula, a path) is not checked, nor is a multi-line one —
    # Sphinx joins a paragraph's lines into one message, so only code blocks, diagrams and formulas keep "\n"
    if words is not None and entry.msgstr != entry.msgid and "\n" not in entry.msgid:
        bad = spelling.misspelt(entry.msgstr, words)
        if bad:
            out.append(Problem(file, line, f"misspelt word{'s' if len(bad) > 1 else ''} in the translation: "
                               f"{', '.join(bad)}",
                               f"correct the spelling, or add a vLLM identifier or term to {spelling.WORDLIST} "
                               "(one per line)", "catalogs"))
    return out


DIAGRAM_START = re.compile(r"^\s*(?:%%.*\n\s*)*(flowchart|graph|sequenceDiagram|stateDiagram(?:-v2)?|classDiagram|"
                           r"erDiagram|gantt|timeline|pie|mindmap|journey|quadrantChart|xychart-beta|block-beta|"
                           r"sankey-beta|gitGraph)\b")


def is_diagram_message(msgid: str) -> bool:
    """A message that is a whole Mermaid diagram (``vllm_book.intl.diagrams`` makes diagrams messages)."""
    return bool(DIAGRAM_START.match(msgid))


def check_diagrams(root: Path, translated: list[tuple[str, po.Entry]]) -> list[Problem]:
    """Parse every translated diagram with the pinned Mermaid (the same parser ``make validate`` uses for the
    Chinese ones): a translation that breaks the syntax would draw nothing in the browser."""
    from . import mermaid
    from .common import index_cache

    if not translated:
        return []
    try:
        _version, results = mermaid.parse_many([e.msgstr for _f, e in translated], root / "node_modules",
                                               cache_dir=index_cache(root))
    except mermaid.MermaidUnavailable as exc:
        f, e = translated[0]
        return [Problem(f, e.msgstr_line or e.line, f"{len(translated)} translated diagram(s) cannot be parsed: {exc}",
                        "install Node.js and the pinned Mermaid: make mermaid-js", "catalogs")]
    out = []
    for (f, e), (ok, line, message) in zip(translated, results, strict=True):
        if not ok:
            where = f" (line {line} of the diagram)" if line else ""
            out.append(Problem(f, e.msgstr_line or e.line,
                               f"the translated Mermaid diagram of the msgid at line {e.line} does not parse{where}: "
                               f"{message}",
                               "translate only the labels; keep the diagram's keywords, ids, arrows and brackets, and "
                               "quote a label that holds punctuation: A[\"label (x)\"]", "catalogs"))
    return out


def check(root: Path, only: list[Path] | None = None, extra_words: frozenset[str] = frozenset(),
          per_file: dict[str, Figures] | None = None, *, diagrams: bool = True) -> tuple[list[Problem], Figures]:
    """Every catalog of *root* (or the *only* ones); *extra_words* adds to the word list (a translator's draft
    list, before the words go into it); *per_file*, when given, receives each catalog's figures."""
    root = Path(root)
    problems: list[Problem] = []
    fig = Figures()
    wl_path = root / spelling.WORDLIST
    words, bad = spelling.load_wordlist(wl_path)
    words = words | {w.lower() for w in extra_words}
    wanted = {Path(p).resolve() for p in only} if only else None
    translated_diagrams: list[tuple[str, po.Entry]] = []
    for line, msg in bad:
        problems.append(Problem(rel(root, wl_path), line, msg, "put one word per line", "catalogs"))
    for lang, path in catalog_files(root):
        if wanted is not None and path.resolve() not in wanted:
            continue
        file = rel(root, path)
        try:
            cat = po.read(path)
        except po.POError as exc:
            problems.append(Problem(file, exc.line, exc.message, exc.fix, "catalogs"))
            continue
        fig.catalogs += 1
        mine = Figures(catalogs=1)
        for entry in cat.messages():
            mine.messages += 1
            mine.translated += entry.translated
            mine.fuzzy += entry.fuzzy
            problems.extend(check_entry(file, entry, words if lang == "en" else None))
            if entry.translated and entry.msgstr != entry.msgid and is_diagram_message(entry.msgid):
                translated_diagrams.append((file, entry))
        fig.messages += mine.messages
        fig.translated += mine.translated
        fig.fuzzy += mine.fuzzy
        if per_file is not None:
            per_file[file] = mine
    if diagrams:
        problems.extend(check_diagrams(root, translated_diagrams))
    return problems, fig

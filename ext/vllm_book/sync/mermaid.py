"""Mermaid syntax check: every diagram parsed by the pinned mermaid, in one node process.

``node_modules/mermaid`` (installed by ``make mermaid-js``) is the same
Mermaid the HTML edition ships, so a diagram that passes here parses in the
reader's browser.  ``mermaid_check.mjs`` stubs DOMPurify's hooks, which is
all ``mermaid.parse()`` needs from a DOM.

:func:`check_pages` is the one implementation ``make validate`` (check
``diagrams``) and the build (:mod:`vllm_book.diagrams`) both call.  Results are
cached by content (sha256 of the Mermaid version, the checker script and the
diagram text) in ``<cache>/mermaid-parse.json``, so a rebuild starts ``node``
only for diagrams it has not seen.

Lines.  Mermaid numbers the lines of the text it parses *after* removing a
diagram's front matter, its ``%%{init}%%`` directives, its ``%%`` comment
lines and its leading blank lines; :func:`line_map` replays those removals
(with the regular expressions of Mermaid 11) to find the line of the chapter
file.  Words.  The parser's token names (``Expecting 'SQE', got 'PS'``) are
translated into the characters a writer typed (:func:`words`).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).with_name("mermaid_check.mjs")
INSTALL_HINT = "install Node.js (apt-get install nodejs npm) and the pinned Mermaid: make mermaid-js"
CACHE_FILE = "mermaid-parse.json"
FIX = ("{hint}check the line against the Mermaid {version} syntax (try the diagram at https://mermaid.live); "
       'a label holding ( ) [ ] {{ }} | or ; must be quoted: A["f(x)"]')


class MermaidUnavailable(RuntimeError):
    pass


# --------------------------------------------------------------------------- lines

_FRONT = re.compile(r"^-{3}\s*[\n\r](.*?)[\n\r]-{3}\s*[\n\r]+", re.S)
_DIRECTIVE = re.compile(r"%{2}{\s*(?:(\w+)\s*:|(\w+))\s*(?:(\w+)|((?:(?!}%{2}).|\r?\n)*))?\s*(?:}%{2})?", re.I)
_COMMENT = re.compile(r"^\s*%%(?!{)[^\n]+\n?", re.M)


def _remove(chars: str, origin: list[int], pattern: re.Pattern[str], count: int = 0) -> tuple[str, list[int]]:
    out, keep, pos = [], [], 0
    for n, m in enumerate(pattern.finditer(chars)):
        if count and n >= count:
            break
        out.append(chars[pos:m.start()])
        keep.extend(origin[pos:m.start()])
        pos = m.end()
    out.append(chars[pos:])
    keep.extend(origin[pos:])
    return "".join(out), keep


def line_map(text: str) -> list[int]:
    """For each line of the text Mermaid parses, the line of *text* it came from (1-based)."""
    origin = []
    for n, line in enumerate(text.split("\n"), 1):
        origin.extend([n] * (len(line) + 1))
    chars = text + "\n"
    chars, origin = _remove(chars, origin, _FRONT, count=1)
    chars, origin = _remove(chars, origin, _DIRECTIVE)
    chars, origin = _remove(chars, origin, _COMMENT)
    stripped = len(chars) - len(chars.lstrip())
    chars, origin = chars[stripped:], origin[stripped:]
    out = [origin[0]] if origin else [1]
    out.extend(origin[i + 1] for i, c in enumerate(chars[:-1]) if c == "\n" and i + 1 < len(origin))
    return out


def source_line(text: str, parsed_line: int) -> int:
    """The line of *text* (the diagram as written) of Mermaid's *parsed_line*."""
    lines = line_map(text)
    if parsed_line < 1:
        return lines[0]
    return lines[min(parsed_line, len(lines)) - 1]


# --------------------------------------------------------------------------- words

TOKENS = {
    "PS": "'('", "PE": "')'", "SQS": "'['", "SQE": "']'", "DIAMOND_START": "'{'", "DIAMOND_STOP": "'}'",
    "DOUBLECIRCLEEND": "'))'", "STADIUMEND": "'])'", "SUBROUTINEEND": "']]'", "CYLINDEREND": "')]'",
    "TRAPEND": "'/]'", "INVTRAPEND": "'\\]'", "TAGEND": "'>'", "TAGSTART": "'<'", "PIPE": "'|'", "MINUS": "'-'",
    "AMP": "'&'", "SEMI": "';'", "COLON": "':'", "COMMA": "','", "NEWLINE": "the end of the line",
    "EOF": "the end of the diagram", "1": "the end of the diagram", "TEXT": "label text", "UNICODE_TEXT": "label text",
    "NODE_STRING": "a node name", "STR": "a quoted text", "MD_STR": "a quoted text", "LINK": "an arrow (-->)",
    "START_LINK": "an arrow (-->)", "LINK_ID": "an arrow id", "TXT": "a message text (': text')",
    "ACTOR": "a participant name", "SPACE": "a space", "-)": "'-)'", "ALPHA": "a name", "NUM": "a number",
    "end": "'end'", "INVALID": "something Mermaid does not know",
}


def _token(name: str) -> str:
    return TOKENS.get(name, f"'{name.lower()}'" if re.fullmatch(r"[A-Z_]+", name) else f"'{name}'")


def words(message: str) -> str:
    """The parser's message in a writer's words, without the context excerpt (the report points at the line)."""
    text = message.strip()
    m = re.search(r"Expecting (.+?), got '([^']*)'", text, re.S)
    if m:
        expected = []
        for name in re.findall(r"'([^']*)'", m.group(1)):
            w = _token(name)
            if w not in expected:
                expected.append(w)
        shown = ", ".join(expected[:4]) + (", …" if len(expected) > 4 else "")
        return f"Mermaid cannot read this line: it found {_token(m.group(2))} where it expected {shown}"
    m = re.search(r"Lexer error on line \d+, column (\d+)", text)
    if m:
        return f"Mermaid does not recognise the text at column {int(m.group(1)) + 1} of this line"
    if text.startswith("No diagram type detected"):
        return ("the first line does not name a diagram type Mermaid knows "
                "(flowchart LR, sequenceDiagram, classDiagram, stateDiagram-v2, …)")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not re.fullmatch(r"-*\^", ln.strip())]
    out = " ".join(ln for ln in lines if not ln.startswith("..."))
    out = re.sub(r"(Parse|Lexer) error on line \d+[,:]?\s*", "", out)
    return (out if len(out) <= 300 else out[:297] + "…") or "Mermaid cannot parse this diagram"


# --------------------------------------------------------------------------- parsing


def node_binary() -> str | None:
    return shutil.which("node")


def version_of(node_modules: Path) -> str:
    try:
        return json.loads((node_modules / "mermaid" / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return ""


def _run(diagrams: list[str], node_modules: Path, timeout: float) -> tuple[str, list[dict]]:
    node = node_binary()
    if node is None:
        raise MermaidUnavailable(f"node is not installed, so {len(diagrams)} Mermaid diagram(s) cannot be checked")
    if not (node_modules / "mermaid" / "package.json").is_file():
        raise MermaidUnavailable(f"{node_modules}/mermaid is missing, so {len(diagrams)} Mermaid diagram(s) cannot be checked")
    proc = subprocess.run([node, str(SCRIPT), str(node_modules)], input=json.dumps({"diagrams": diagrams}),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise MermaidUnavailable(f"the Mermaid checker failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    data = json.loads(proc.stdout)
    return data["version"], data["results"]


def parse_many(diagrams: list[str], node_modules: Path, *, timeout: float = 120,
               cache_dir: Path | None = None) -> tuple[str, list[tuple[bool, int, str]]]:
    """Parse *diagrams*; returns (mermaid version, [(ok, line of the diagram text as written, message)])."""
    if not (node_modules / "mermaid" / "package.json").is_file() or node_binary() is None:
        _run(diagrams, node_modules, timeout)  # raises MermaidUnavailable with the reason
    version = version_of(node_modules)
    salt = hashlib.sha256(f"{version}\0".encode() + SCRIPT.read_bytes()).hexdigest()
    keys = [hashlib.sha256(f"{salt}\0{text}".encode()).hexdigest() for text in diagrams]
    cache_file = Path(cache_dir) / CACHE_FILE if cache_dir else None
    cached: dict[str, dict] = {}
    if cache_file is not None:
        try:
            cached = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            cached = {}
    todo = sorted({k: t for k, t in zip(keys, diagrams, strict=True) if k not in cached}.items())
    if todo:
        version, results = _run([t for _k, t in todo], node_modules, timeout)
        for (k, _t), r in zip(todo, results, strict=True):
            cached[k] = r
        if cache_file is not None:
            from ..fsutil import write_atomic

            keep = {k: cached[k] for k in set(keys)}  # only this book's diagrams
            write_atomic(cache_file, json.dumps(keep, sort_keys=True).encode())
    out = []
    for text, k in zip(diagrams, keys, strict=True):
        r = cached[k]
        if r["ok"]:
            out.append((True, 0, ""))
        else:
            out.append((False, source_line(text, int(r.get("line") or 0)), words(r["message"])))
    return version, out


def check_pages(root: Path, pages: list, *, node_modules: Path, cache_dir: Path | None = None):
    """Problems of every ``{mermaid}`` diagram of *pages* (:class:`~.mdscan.Page`), and stats."""
    from .common import Problem, rel

    diagrams = [(p, d) for p in pages for d in p.diagrams]
    if not diagrams:
        return [], {"diagrams": 0}
    try:
        version, results = parse_many([d.text for _p, d in diagrams], node_modules, cache_dir=cache_dir)
    except (MermaidUnavailable, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        p0, d0 = diagrams[0]
        return [Problem(rel(root, p0.path), d0.line, str(exc), INSTALL_HINT, "diagrams")], {"diagrams": len(diagrams)}
    out = []
    for (page, d), (ok, line, msg) in zip(diagrams, results, strict=True):
        if not ok:
            out.append(Problem(rel(root, page.path), d.first + line - 1,
                               f"Mermaid diagram (fence at line {d.line}) does not parse: {msg}",
                               FIX.format(hint="", version=version), "diagrams"))
    return out, {"diagrams": len(diagrams), "mermaid": version}

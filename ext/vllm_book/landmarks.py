"""``{landmarks}``: the repository landmarks page (仓库地标速查), generated from a data file.

Each record of ``vllm_book_landmarks`` (TOML, ``[[landmark]]`` with ``area``, ``target``, ``what``,
``chapter``) becomes a table row: the target as a ``{src}`` anchor (resolved and checked like any other, so a
landmark that moves or vanishes at a new pin fails the build), one line on what it is for, and a link to the
chapter that explains it.  Rows are grouped by ``area`` in the order areas first appear.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from .anchors.nodes import src_ref
from .curriculum import record_lines

logger = logging.getLogger(__name__)

FIELDS = ("area", "target", "what", "chapter")
HEADERS = {"zh": ("地标", "作用", "讲解章节"), "en": ("Landmark", "What it is for", "Explained in")}


def load(path: Path) -> tuple[list[dict], list[tuple[int, str]]]:
    """The records and the problems found, as (line in the file, message with its fix)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        return [], [(int(m.group(1)) if m else 1, f"not valid TOML: {exc}. Fix: one [[landmark]] table per entry")]
    lines = record_lines(text, "[[landmark]]")
    records, problems = [], []
    for i, rec in enumerate(data.get("landmark", [])):
        line = lines[i] if i < len(lines) else 1
        missing = [f for f in FIELDS if not isinstance(rec.get(f), str) or not rec[f].strip()]
        extra = sorted(set(rec) - set(FIELDS))
        if missing:
            wanted = ", ".join(f'{f} = "…"' for f in FIELDS)
            problems.append((line, f"landmark without {', '.join(missing)}. Fix: give every [[landmark]] {wanted}"))
            continue
        if extra:
            problems.append((line, f"unknown field(s) {', '.join(extra)}. Fix: use only {', '.join(FIELDS)}"))
        records.append({**rec, "line": line})
    return records, problems


def _cell(*children: nodes.Node, message: tuple[str, str, int] | None = None) -> nodes.entry:
    """A table cell; *message* ``(text, source, line)`` makes its paragraph a message of the page's catalog."""
    entry = nodes.entry()
    para = nodes.paragraph(message[0] if message else "")
    if message:
        para.source, para.line = message[1], message[2]
    else:
        para["translatable"] = False  # a header in the edition's language, an anchor, a docname
    para.extend(children)
    entry += para
    return entry


class Landmarks(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        cfg = self.config.vllm_book_landmarks
        path = Path(self.config.vllm_book_repo_root or self.env.srcdir) / cfg
        if not path.is_file():
            logger.error("vllm_book_landmarks = %r: no such file. Fix: create it (see docs/authoring.md) or point the "
                         "setting at it", cfg, location=(self.env.docname, self.lineno), type="vllm_book",
                         subtype="landmarks")
            return []
        self.env.note_dependency(str(path))
        records, problems = load(path)
        for line, msg in problems:
            logger.error("%s:%d: %s", path, line, msg, type="vllm_book", subtype="landmarks")
        lang = "zh" if (self.config.language or "").startswith("zh") else "en"
        areas: dict[str, list[dict]] = {}
        for rec in records:
            if rec["chapter"] not in self.env.found_docs:
                logger.error("%s:%d: chapter %r is not a page of the book. Fix: name the docname of the chapter that "
                             "explains %s", path, rec["line"], rec["chapter"], rec["target"], type="vllm_book",
                             subtype="landmarks")
                continue
            areas.setdefault(rec["area"], []).append(rec)
        out: list[nodes.Node] = []
        for area, rows in areas.items():
            rubric = nodes.rubric(area, area)
            rubric.source, rubric.line = self.get_source_info()
            out.append(rubric)
            table = nodes.table(classes=["landmarks"])
            group = nodes.tgroup(cols=3)
            table += group
            for width in (40, 35, 25):
                group += nodes.colspec(colwidth=width)
            head = nodes.thead()
            hrow = nodes.row()
            for label in HEADERS[lang]:
                hrow += _cell(nodes.Text(label))
            head += hrow
            group += head
            body = nodes.tbody()
            for rec in rows:
                row = nodes.row()
                target = rec["target"].strip()
                # the whole target as link text: a bare ``main`` or ``LLM`` says too little out of context
                ref = src_ref("", target=target, explicit_title=True)
                ref += nodes.literal(target, target)
                ref.source, ref.line = self.get_source_info()
                row += _cell(ref)
                row += _cell(nodes.Text(rec["what"]), message=(rec["what"], *self.get_source_info()))
                xref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + rec["chapter"],
                                             refexplicit=False, refwarn=True, refdoc=self.env.docname)
                xref += nodes.inline(rec["chapter"], rec["chapter"])
                row += _cell(xref)
                body += row
            group += body
            out.append(table)
        return out


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("landmarks", Landmarks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

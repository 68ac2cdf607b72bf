"""Drift at a glance: what the newest committed impact report says about each chapter's cited code.

``make impact TO=<release>`` writes ``docs/impact-<pin>-to-<release>.json``.  This feature reads the newest
such report (``vllm_book_impact_report``, default: the highest ``to`` version in ``docs/``) and

* adds a 版本漂移 field to each chapter's header card: how many of the symbols the chapter cites changed,
  moved or vanished in that release, linked to the chapter's section of the drift page;
* provides the ``{drift-report}`` directive for that page: per chapter, the cited symbols that changed, moved
  or vanished, with the lines of the chapter that cite them;
* gives the source browser (:func:`file_drift`) the files of the pinned tree that changed, vanished or were
  renamed in that release, so each such file page says so.

Nothing is typed by hand; a chapter the report predates says so.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

logger = logging.getLogger(__name__)

KINDS = ("changed", "moved", "removed")
LABELS = {
    "zh": {"field": "版本漂移", "none": "影响报告（vLLM v{to}）生成时本章尚未收录",
           "clean": "本章引用的 {n} 处源码在 vLLM v{to} 中都未变",
           "some": "本章引用的 {n} 处源码在 vLLM v{to} 中：{parts}",
           "changed": "{k} 处改动", "moved": "{k} 处移动", "removed": "{k} 处消失",
           "col": ("引用的源码", "变化", "本章引用处")},
    "en": {"field": "Drift", "none": "not covered by the impact report for vLLM v{to}",
           "clean": "all {n} cited places unchanged in vLLM v{to}",
           "some": "of {n} cited places, in vLLM v{to}: {parts}",
           "changed": "{k} changed", "moved": "{k} moved", "removed": "{k} removed",
           "col": ("Cited code", "Change", "Cited at")},
}

_CACHE: dict[tuple[str, float], dict] = {}


def _version_key(path: Path) -> tuple[int, ...]:
    m = re.search(r"-to-(\d+(?:\.\d+)*)\.json$", path.name)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def report_path(app: Sphinx) -> Path | None:
    return report_path_for(app.config, app.srcdir)


def report_path_for(config, srcdir) -> Path | None:
    root = Path(config.vllm_book_repo_root or srcdir)
    if config.vllm_book_impact_report:
        return root / config.vllm_book_impact_report
    found = sorted((root / "docs").glob("impact-*-to-*.json"), key=_version_key)
    return found[-1] if found else None


def load(path: Path) -> dict:
    """``{"to": version, "docs": {docname: [(subject, status, [line, …]), …]}}`` from an impact report."""
    key = (str(path), path.stat().st_mtime)
    if key not in _CACHE:
        data = json.loads(path.read_text(encoding="utf-8"))
        docs: dict[str, list] = defaultdict(list)
        for entry in data.get("cited", []):
            by_doc: dict[str, list[int]] = defaultdict(list)
            for use in entry.get("uses", []):
                m = re.match(r"source/(.+)\.md:(\d+)$", use)
                if m:
                    by_doc[m.group(1)].append(int(m.group(2)))
            for doc, lines in by_doc.items():
                docs[doc].append((entry["subject"], entry["status"], sorted(lines)))
        files: dict[str, tuple[str, str]] = {p: ("changed", "") for p in data.get("files", {}).get("modified", [])}
        renames = dict(r.split(" -> ", 1) for r in data.get("files", {}).get("renamed", []) if " -> " in r)
        for p in data.get("files", {}).get("removed", []):
            files[p] = ("renamed", renames[p]) if p in renames else ("removed", "")
        _CACHE[key] = {"to": data["to"]["version"], "docs": dict(docs), "files": files}
    return _CACHE[key]


FILE_LABELS = {"changed": "在 vLLM v{to} 中有改动", "removed": "在 vLLM v{to} 中已删除",
               "renamed": "在 vLLM v{to} 中改名为 {new}"}


def file_drift(app: Sphinx) -> dict | None:
    """What the source browser shows on the page of a file of the pinned tree that changed in the newest report:
    ``{"to": version, "files": {path: (kind, new path)}, "page": docname of the drift page}`` (None: no report)."""
    d = _drift(app)
    if d is None:
        return None
    return {"to": d["to"], "files": d.get("files", {}), "page": app.config.vllm_book_drift_page or ""}


def _lang(app: Sphinx) -> str:
    return "zh" if (app.config.language or "").startswith("zh") else "en"


def _drift(app: Sphinx) -> dict | None:
    path = report_path(app)
    if path is None or not path.is_file():
        return None
    try:
        return load(path)
    except (OSError, ValueError, KeyError) as exc:
        logger.error("%s: not an impact report (%s). Fix: regenerate it with make impact TO=<release>", path, exc,
                     type="vllm_book", subtype="drift")
        return None


def anchor_of(docname: str) -> str:
    return "drift-" + re.sub(r"[^a-z0-9]+", "-", docname.lower()).strip("-")


def card_text(entries: list | None, to: str, lang: str) -> str:
    lab = LABELS[lang]
    if entries is None:
        return lab["none"].format(to=to)
    counts = Counter(status for _, status, _ in entries)
    parts = [lab[k].format(k=counts[k]) for k in KINDS if counts[k]]
    if not parts:
        return lab["clean"].format(n=len(entries), to=to)
    return lab["some"].format(n=len(entries), to=to, parts="、".join(parts) if lang == "zh" else ", ".join(parts))


def add_drift_field(app: Sphinx, docname: str, card: nodes.Element) -> None:
    from ..chapters import add_card_field

    drift = _drift(app)
    if drift is None:
        return
    app.env.note_dependency(str(report_path(app)))
    lang = _lang(app)
    entries = drift["docs"].get(docname)
    para = nodes.paragraph("", "")
    para["translatable"] = False
    text = card_text(entries, drift["to"], lang)
    page = app.config.vllm_book_drift_page
    if entries is not None and page:
        ref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget=anchor_of(docname),
                                    refexplicit=True, refwarn=False, refdoc=docname)
        ref += nodes.inline(text, text)
        para += ref
    else:
        para += nodes.Text(text)
    add_card_field(card, LABELS[lang]["field"], para, "drift")


class DriftReport(SphinxDirective):
    """Per chapter of the report: the cited code that changed, moved or vanished, and where it is cited."""

    def run(self) -> list[nodes.Node]:
        drift = _drift(self.env.app)
        if drift is None:
            return [nodes.paragraph("", "（没有已提交的影响报告：运行 make impact TO=<release>）")]
        self.env.note_dependency(str(report_path(self.env.app)))
        lang = _lang(self.env.app)
        lab = LABELS[lang]
        out: list[nodes.Node] = []
        for docname in sorted(drift["docs"]):
            entries = [e for e in drift["docs"][docname] if e[1] in KINDS]
            section = nodes.section(ids=[anchor_of(docname)], names=[anchor_of(docname)])
            title = nodes.title("", "")
            xref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + docname,
                                         refexplicit=False, refwarn=False, refdoc=self.env.docname)
            xref += nodes.literal(docname, docname)
            title += xref
            section += title
            section += nodes.paragraph("", card_text(drift["docs"][docname], drift["to"], lang))
            self.env.get_domain("std").note_hyperlink_target(
                anchor_of(docname), self.env.docname, anchor_of(docname), docname)
            if entries:
                # the lists are for the online reader; the EPUB/PDF keep the per-chapter summary only
                only = addnodes.only(expr="html")
                items = nodes.bullet_list()
                for subject, status, lines in entries:
                    para = nodes.paragraph("", "", nodes.literal(subject, subject),
                                           nodes.Text(f" — {lab[status].format(k='').strip()} · "
                                                      f"{', '.join(f'L{n}' for n in lines)}"))
                    items += nodes.list_item("", para)
                only += items
                section += only
            out.append(section)
        return out


def report_figures(data: dict) -> dict[str, str]:
    """The figures of an impact report the ``{impact}`` role can print, by key."""
    counts = data.get("counts", {})
    files = data.get("files", {})
    anchors = [a for c in data.get("cited", []) for a in c.get("anchors", [])]
    figures: dict[str, int | str] = {
        "from": data.get("from", {}).get("version", ""), "to": data.get("to", {}).get("version", ""),
        "cited": len(data.get("cited", [])), "anchors": len(anchors),
        "anchors_broken": sum(1 for a in anchors if not a.get("resolves")),
        "pages": sum(1 for p in data.get("pages", {}).values() if isinstance(p, dict) and p.get("reasons")),
        "uncovered": len(data.get("uncovered", [])),
        "files.added": files.get("n_added", 0), "files.removed": files.get("n_removed", 0),
        "files.modified": files.get("n_modified", 0), "files.renamed": len(files.get("renamed", [])),
        "pages_citing": len({u.split(":")[0] for c in data.get("cited", []) for u in c.get("uses", [])}),
    }
    total = len(data.get("cited", [])) or 1
    for k in ("unchanged", "changed", "moved", "removed"):
        figures[f"counts.{k}"] = counts.get(k, 0)
        figures[f"counts.{k}.share"] = f"{100 * counts.get(k, 0) / total:.1f} %"
    broken = figures["anchors_broken"]
    figures["anchors_broken.share"] = f"{100 * broken / (figures['anchors'] or 1):.1f} %"
    figures["anchors_broken.one_in"] = round(figures["anchors"] / broken) if broken else 0
    figures["files.removed_real"] = files.get("n_removed", 0) - len(files.get("renamed", []))
    return {k: (f"{v:,}" if isinstance(v, int) else v) for k, v in figures.items()}


class ImpactRole(SphinxRole):
    """``{impact}`counts.changed``: a figure of the newest committed impact report, so a page that quotes the
    report stays equal to it when ``make impact`` regenerates it (keys: :func:`report_figures`)."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        path = report_path_for(self.config, self.env.srcdir)
        if path is None or not path.is_file():
            msg = self.inliner.reporter.warning(f"{{impact}}: no committed impact report (make impact TO=<release>)",
                                                line=self.lineno)
            return [nodes.inline(self.text, self.text)], [msg]
        self.env.note_dependency(str(path))
        key = (str(path), path.stat().st_mtime)
        if key not in _RAW:
            _RAW[key] = report_figures(json.loads(path.read_text(encoding="utf-8")))
        figures = _RAW[key]
        name = self.text.strip()
        if name not in figures:
            logger.warning(f"{{impact}}`{name}`: not a figure of {path.name}\n    fix: use one of "
                           f"{', '.join(sorted(figures))}", type="vllm_book", subtype="drift",
                           location=(self.env.docname, self.lineno))
            return [nodes.inline(name, name)], []
        return [nodes.inline(figures[name], figures[name], classes=["impact-figure"])], []


_RAW: dict[tuple[str, float], dict[str, str]] = {}


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.setup_extension("vllm_book.chapters")  # registers the vllm-book-card event
    app.connect("vllm-book-card", add_drift_field)
    app.add_directive("drift-report", DriftReport)
    app.add_role("impact", ImpactRole())
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Chapter machinery: the header card, the reading time, the template check.

A *chapter* is a document whose docname matches
``vllm_book_chapter_pattern`` (``01-overview/00-prerequisites``).  Its YAML
front matter feeds the header card::

    ---
    audience: 谁该读这一篇（一句话）
    prerequisites: [01-overview/01-what-is-vllm]   # docnames
    difficulty: 入门            # 入门 / 进阶 / 高级
    outcomes:                   # 学完能，3–5 条
      - …
    ---

The card is built from plain docutils nodes (a ``container`` holding a
``field_list``) so HTML, EPUB and the rinoh PDF all render it without
special support; prerequisites become ``:doc:`` cross-references, so a
missing one is a normal Sphinx warning.  The card is inserted by a transform
that runs before Sphinx's i18n transform, so its texts are extracted by
``make gettext`` and translated like the rest of the chapter.

耗时 is estimated from the text: CJK characters at
``vllm_book_cjk_chars_per_minute``, Latin words at
``vllm_book_words_per_minute`` and code lines at
``vllm_book_code_lines_per_minute``, rounded up to 5 minutes.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinxcontrib.mermaid import mermaid

from . import frontmatter, template

logger = logging.getLogger(__name__)

from .frontmatter import DIFFICULTIES, REQUIRED_KEYS  # noqa: F401 - re-exported

#: card labels per language; a label is UI text, not chapter text
LABELS: dict[str, dict[str, str]] = {
    "zh": {
        "audience": "谁该读这一篇", "prerequisites": "前置阅读", "time": "耗时",
        "difficulty": "难度", "outcomes": "学完能", "none": "无",
        "minutes": "约 {n} 分钟（按字数估算）",
        "入门": "入门", "进阶": "进阶", "高级": "高级",
        "sections": "小结|自检|下一步", "planned": "编写中", "open": "（", "close": "）",
    },
    "en": {
        "audience": "Who should read this", "prerequisites": "Read first", "time": "Time",
        "difficulty": "Level", "outcomes": "You will be able to", "none": "None",
        "minutes": "about {n} min (estimated from length)",
        "入门": "Beginner", "进阶": "Intermediate", "高级": "Advanced",
        "sections": "Summary|Self-check|Next steps", "planned": "planned",
        "open": " (", "close": ")",
    },
}

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.'-]*")
_CODE = re.compile(r"`([^`]+)`")


def labels(config: Config) -> dict[str, str]:
    lang = (config.language or "zh_CN").split("_")[0]
    return LABELS.get(lang, LABELS["en"])


def is_chapter(config: Config, docname: str) -> bool:
    return re.search(config.vllm_book_chapter_pattern, docname) is not None


def read_front_matter(path: Path) -> tuple[dict[str, Any], int]:
    """The front matter of a Markdown file and the number of lines it spans (``{}``, 0 when it has none or is invalid)."""
    fm = frontmatter.parse(path.read_text(encoding="utf-8"))
    return fm.data, fm.end


def _note_failure(env: Any) -> None:
    """Re-read this chapter on the next build too (the anchors' mechanism), so an incremental build repeats
    its warnings instead of passing a chapter that a full build rejects."""
    try:
        env.get_domain("src").note_failure(env.docname)
    except Exception:  # noqa: BLE001 - the anchors feature is not loaded (some test roots)
        pass


def _planned(app_config: Config, srcdir: str, docname: str) -> bool:
    try:
        from .toc import get_curriculum

        ch = get_curriculum(srcdir, app_config).chapter(docname)
    except (OSError, ValueError):
        return False
    return ch is not None and not ch.written


def reading_minutes(doctree: nodes.Node, cjk_rate: int, word_rate: int, code_rate: int) -> int:
    cjk = words = code_lines = 0
    for node in doctree.findall(nodes.Text):
        parent = node.parent
        if isinstance(parent, nodes.literal_block) or parent.__class__.__name__ == "mermaid":
            code_lines += node.astext().count("\n") + 1
            continue
        text = str(node)
        cjk += len(_CJK.findall(text))
        words += len(_WORD.findall(text))
    minutes = cjk / cjk_rate + words / word_rate + code_lines / code_rate
    return max(5, 5 * math.ceil(minutes / 5))


def _inline(text: str) -> list[nodes.Node]:
    """Plain text with `code` spans (all the markup the card fields allow)."""
    out: list[nodes.Node] = []
    pos = 0
    for m in _CODE.finditer(text):
        if m.start() > pos:
            out.append(nodes.Text(text[pos:m.start()]))
        out.append(nodes.literal(m.group(1), m.group(1)))
        pos = m.end()
    if pos < len(text):
        out.append(nodes.Text(text[pos:]))
    return out


def _field(name: str, body: nodes.Element, key: str) -> nodes.field:
    fname = nodes.field_name(name, name)
    fname["translatable"] = False
    field = nodes.field("", fname, nodes.field_body("", body))
    field["classes"].append(f"card-{key}")
    return field


def add_card_field(card: nodes.Element, name: str, body: nodes.Element, key: str) -> None:
    """Append a field to a header card (for the features that extend it through ``vllm-book-card``)."""
    fields = next(iter(card.findall(nodes.field_list)), None)
    (fields if fields is not None else card).append(_field(name, body, key))


class HeaderCard(SphinxTransform):
    """Insert the header card of a chapter after its H1."""

    default_priority = 15  # before sphinx.transforms.i18n.Locale (20)

    def apply(self, **kwargs: Any) -> None:
        env = self.env
        if not is_chapter(self.config, env.docname):
            return
        source = Path(self.document["source"])
        fm = frontmatter.parse(source.read_text(encoding="utf-8"))

        def exists(docname: str) -> bool:
            return docname in env.found_docs or _planned(self.config, env.srcdir, docname)

        # the checks make validate runs too (vllm_book.frontmatter), at the line of the chapter file
        for line, msg, fix in frontmatter.check_chapter(fm, exists):
            logger.warning("%s\n    fix: %s", msg, fix, location=(env.docname, line), type="vllm_book",
                           subtype="front-matter")
            _note_failure(env)
        if fm.problems:
            return
        data = fm.data
        section = next(iter(self.document.findall(nodes.section)), None)
        if section is None:
            logger.warning("chapter has no H1 title", location=(env.docname, 1), type="vllm_book", subtype="chapter")
            return
        lab = labels(self.config)
        fields = nodes.field_list()

        def translatable(text: str) -> nodes.paragraph:
            p = nodes.paragraph(text, "", *_inline(text))  # rawsource = the msgid of `make gettext`
            p.source, p.line = str(source), 1
            return p

        if audience := data.get("audience"):
            fields += _field(lab["audience"], translatable(str(audience)), "audience")

        prereq = data.get("prerequisites") or []
        if not isinstance(prereq, list):  # reported above; shown as written
            prereq = [prereq]
        prereq = [t for t in prereq if isinstance(t, str)]
        para = nodes.paragraph()
        for i, target in enumerate(prereq):
            if i:
                para += nodes.Text("、" if lab is LABELS["zh"] else ", ")
            if not exists(target.strip().lstrip("/")):  # reported above: no second "unknown document" warning
                para += nodes.inline(target, target)
                continue
            ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + target.strip().lstrip("/"),
                                        refexplicit=False, refwarn=True, refdoc=env.docname)
            ref += nodes.inline(target, target)
            para += ref
        if not prereq:
            para += nodes.Text(lab["none"])
        fields += _field(lab["prerequisites"], para, "prerequisites")

        minutes = reading_minutes(self.document, self.config.vllm_book_cjk_chars_per_minute,
                                  self.config.vllm_book_words_per_minute,
                                  self.config.vllm_book_code_lines_per_minute)
        env.metadata[env.docname]["reading_minutes"] = minutes
        tpara = nodes.paragraph("", lab["minutes"].format(n=minutes))
        tpara["translatable"] = False
        fields += _field(lab["time"], tpara, "time")

        difficulty = str(data.get("difficulty", ""))
        if difficulty:
            dpara = nodes.paragraph("", lab.get(difficulty, difficulty))
            dpara["translatable"] = False
            fields += _field(lab["difficulty"], dpara, "difficulty")

        outcomes = data.get("outcomes") or []
        if not isinstance(outcomes, list):
            outcomes = [outcomes]
        if outcomes:
            blist = nodes.bullet_list()
            for item in outcomes:
                blist += nodes.list_item("", translatable(str(item)))
            fields += _field(lab["outcomes"], blist, "outcomes")

        card = nodes.container("", fields, classes=["chapter-card"])
        # other features (review state, the pin) append fields through this event
        env.events.emit("vllm-book-card", env.docname, card)
        title_index = section.first_child_matching_class(nodes.title)
        section.insert((title_index or 0) + 1, card)


def _is_dropdown(node: nodes.Element) -> bool:
    return node.get("design_component") == "dropdown" or "sd-dropdown" in node.get("classes", ())


def check_template(app: Sphinx, doctree: nodes.document) -> None:
    """Warn (file:line) when a chapter misses 小结 / 自检 / 下一步."""
    env = app.env
    if not is_chapter(app.config, env.docname):
        return
    lab = labels(app.config)
    required = list(app.config.vllm_book_chapter_sections)
    # a heading counts under its source name or under the edition's translation of it
    # (a chapter not yet translated keeps its Chinese headings in the English edition)
    aliases = {name: i for i, name in enumerate(required)}
    translated = lab["sections"].split("|")
    if len(translated) == len(required):
        aliases.update({name: i for i, name in enumerate(translated)})
    top = next(iter(doctree.findall(nodes.section)), None)
    if top is None:
        return
    h2 = [(s[0].astext().strip(), s.line or s[0].line or 1, sum(1 for n in s.findall(nodes.Element) if _is_dropdown(n)))
          for s in top.children if isinstance(s, nodes.section)]
    try:
        end_line = len(Path(doctree["source"]).read_text(encoding="utf-8").splitlines()) or 1
    except (OSError, KeyError):
        end_line = max((n.line or 0 for n in doctree.findall(nodes.Element) if n.line), default=1)
    # make validate runs the same check on its scan of the Markdown (vllm_book.template)
    diagrams = sum(1 for _n in doctree.findall(mermaid))
    for line, msg, fix in template.check(h2, required, aliases, end_line) + template.check_diagrams(diagrams, top.line or 1):
        logger.warning("%s\n    fix: %s", msg, fix, location=(env.docname, line), type="vllm_book", subtype="chapter")
        _note_failure(env)


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.add_event("vllm-book-card")
    app.add_transform(HeaderCard)
    app.connect("doctree-read", check_template)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

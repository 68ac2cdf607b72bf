"""The PDF edition: rinohtype's ``rinoh`` builder, shaped into a Chinese book.

:class:`BookRinohBuilder` (registered under rinohtype's name ``rinoh`` when
that builder is in use) changes four things and leaves rendering to rinohtype:

* **structure** (:func:`shape_book`): the home page becomes the unnumbered
  chapter 关于本书 (its HTML-only 目录 section is dropped), every part
  (a document holding chapters) becomes a top-level division titled
  第一部分 …, every chapter a division titled 第 N 章 … (numbered through the
  book, starting on a new page), the other root documents 附录 A …; the
  源码索引 appendix (:mod:`.source_index`) closes the book.  Labels are part of
  the title text, so the table of contents, the PDF bookmarks and the running
  headers all show them.  Nodes rinohtype cannot render (sphinx-design
  components) become plain docutils nodes.
* **text** (:mod:`.rinoh_cjk`): U+200B line-break opportunities in running
  Chinese text; the zh_CN language (目录, 图, 表, admonition titles).
* **fonts** (:mod:`.fonts`): Noto CJK subset to the characters of this
  document, registered as the typefaces the stylesheet names.
* **speed**: the reference cache ``<target>.rtc`` is kept in the cache dir too,
  so a build after ``make clean`` still renders once when nothing moved;
  rinohtype's warnings become Sphinx warnings (``-W`` applies); patches in
  :mod:`.rinoh_patches`.
"""

from __future__ import annotations

import datetime
import re
import shutil
import time
import warnings
from pathlib import Path

from docutils import nodes
from rinoh.frontend.sphinx import RinohBuilder
from sphinx import addnodes
from sphinx.config import Config
from sphinx.locale import admonitionlabels
from sphinx.util import logging

from ..chapters import is_chapter
from . import RTT, fonts, rinoh_cjk, rinoh_patches
from ._util import app_of, cache_root

logger = logging.getLogger(__name__)

LABELS = {
    "zh": {"about": "关于本书", "part": "第{n}部分", "chapter": "第 {n} 章", "appendix": "附录 {n}",
           "subtitle": "对照 vLLM v{version} 源码", "pin": "锁定 vLLM v{version} · commit {commit}",
           "built": "构建于 {date}", "sep": "\u3000"},
    "en": {"about": "About this book", "part": "Part {n}", "chapter": "Chapter {n}", "appendix": "Appendix {n}",
           "subtitle": "Reading the vLLM v{version} source", "pin": "Pinned to vLLM v{version} · commit {commit}",
           "built": "Built {date}", "sep": "  "},
}
CN_DIGITS = "零一二三四五六七八九"
#: rinohtype warnings about layout (an unbreakable literal, a wide table): reported, not fatal;
#: every other rinohtype warning (missing glyph, unknown style, …) is a Sphinx warning
MISSING_GLYPH = re.compile(r"does not contain glyph for unicode index 0x([0-9a-fA-F]+)")
LAYOUT_NOTES = ("too long to fit", "too wide to fit", "Tab space exceeded", "Tab did not fall")


def labels(config: Config) -> dict[str, str]:
    return LABELS["zh" if (config.language or "zh").startswith("zh") else "en"]


def cn_number(n: int) -> str:
    """1 → 一, 10 → 十, 12 → 十二, 20 → 二十 (enough for part numbers)."""
    if n < 10:
        return CN_DIGITS[n]
    tens, ones = divmod(n, 10)
    return ("" if tens == 1 else CN_DIGITS[tens]) + "十" + (CN_DIGITS[ones] if ones else "")


def _pin(config: Config):
    from ..pin import load_pin

    return load_pin(Path(config.vllm_book_repo_root) if config.vllm_book_repo_root else None)


def default_document(config: Config) -> dict[str, object]:
    """The ``rinoh_documents`` entry used when ``conf.py`` sets none."""
    lab = labels(config)
    pin = _pin(config)
    basename = config.epub_basename if config.epub_basename else "book"
    return {
        "doc": config.root_doc,
        "target": basename,
        "template": str(RTT),
        "title": config.project,
        "subtitle": lab["subtitle"].format(version=pin.version),
        "author": config.author,
    }


# -- structure ----------------------------------------------------------------------------------


def _outer_start_of_file(node: nodes.Node) -> addnodes.start_of_file | None:
    p = node.parent
    while p is not None:
        if isinstance(p, addnodes.start_of_file):
            return p
        p = p.parent
    return None


def _first_section(node: nodes.Element) -> nodes.section | None:
    return next((c for c in node.children if isinstance(c, nodes.section)), None)


def _prefix_title(section: nodes.section, label: str, sep: str) -> None:
    title = section[0] if section.children and isinstance(section[0], nodes.title) else None
    if title is None:
        return
    title.insert(0, nodes.Text(label + sep))


def _has_content(node: nodes.Element) -> bool:
    for child in node.children:
        if isinstance(child, (nodes.title, nodes.target, addnodes.toctree, nodes.comment)):
            continue
        if isinstance(child, nodes.compound) and "toctree-wrapper" in child.get("classes", ()):
            if _has_content(child):
                return True
            continue
        if isinstance(child, nodes.section):
            if _has_content(child):
                return True
            continue
        return True
    return False


def fix_parents(tree: nodes.Node) -> None:
    """Re-link ``parent`` pointers: Sphinx's ``inline_all_toctrees`` assigns
    ``start_of_file.children`` directly, leaving the included documents' top
    nodes pointing at their old document."""
    for node in tree.findall(nodes.Element):
        for child in node.children:
            child.parent = node


def shape_book(tree: nodes.document, config: Config) -> dict[str, int]:
    """Parts, chapters and appendices at the top level, labelled; returns counts."""
    fix_parents(tree)
    lab = labels(config)
    sep = lab["sep"]
    tops = [n for n in tree.findall(addnodes.start_of_file) if _outer_start_of_file(n) is None]
    for sof in tops:
        sof.parent.remove(sof)
    # what is left is the home page: drop sections that only held toctrees (目录)
    for section in list(tree.findall(nodes.section)):
        if section.parent is not None and not _has_content(section):
            section.parent.remove(section)
    for compound in list(tree.findall(nodes.compound)):
        if "toctree-wrapper" in compound.get("classes", ()) and not _has_content(compound):
            compound.parent.remove(compound)
    front = [c for c in tree.children]
    tree.clear()
    if any(not isinstance(c, (nodes.target, nodes.comment)) for c in front):
        about = nodes.section("", nodes.title(lab["about"], lab["about"]), ids=["vllm-book-about"],
                              classes=["book-about"], names=[])
        about.extend(front)
        tree += about
    else:
        tree.extend(front)
    counts: dict = {"parts": 0, "chapters": 0, "appendices": 0, "labels": {}}
    for sof in tops:
        tree += sof
        section = _first_section(sof)
        if section is None:
            continue
        chapters = [s for s in sof.findall(addnodes.start_of_file)
                    if s is not sof and is_chapter(config, s["docname"])]
        docname = sof["docname"]
        # a part: it holds chapters, or it is the index of a directory chapters live in
        is_part = bool(chapters) or (docname.endswith("/index")
                                     and is_chapter(config, docname[: -len("index")] + "00-x"))
        if is_part:
            counts["parts"] += 1
            section["classes"].append("book-part")
            _prefix_title(section, lab["part"].format(n=cn_number(counts["parts"])) if lab is LABELS["zh"]
                          else lab["part"].format(n=counts["parts"]), sep)
            for ch in chapters:
                ch_section = _first_section(ch)
                if ch_section is None:
                    continue
                counts["chapters"] += 1
                ch_section["classes"].append("book-chapter")
                counts["labels"][ch["docname"]] = lab["chapter"].format(n=counts["chapters"])
                _prefix_title(ch_section, counts["labels"][ch["docname"]], sep)
        elif is_chapter(config, sof["docname"]):
            counts["chapters"] += 1
            section["classes"].append("book-chapter")
            counts["labels"][docname] = lab["chapter"].format(n=counts["chapters"])
            _prefix_title(section, counts["labels"][docname], sep)
        else:
            counts["appendices"] += 1
            section["classes"].append("book-appendix")
            counts["labels"][docname] = lab["appendix"].format(n=chr(ord("A") + counts["appendices"] - 1))
            _prefix_title(section, counts["labels"][docname], sep)
    return counts


def next_appendix_label(config: Config, counts: dict[str, int]) -> str:
    counts["appendices"] += 1
    return labels(config)["appendix"].format(n=chr(ord("A") + counts["appendices"] - 1))


# -- tables -------------------------------------------------------------------------------------

#: the text width in "half-ems" of the 9 pt table text (415 pt / 4.5 pt)
TABLE_UNITS = 92


def _units(text: str) -> int:
    """Display width in half-ems: CJK characters count 2, others 1."""
    from .rinoh_patches import is_cjk

    return round(sum(2 if is_cjk(c) else 1.15 for c in text))


def _unbreakable(entry: nodes.Element) -> int:
    """Half-ems of the widest piece that cannot wrap: an inline literal (monospace
    glyphs are ~1.2 half-ems wide; rinohtype breaks only after ``/``) or a Latin word."""
    from .rinoh_patches import is_cjk

    widest = 0
    for lit in entry.findall(nodes.literal):
        for piece in lit.astext().split("/"):
            widest = max(widest, round(sum(2 if is_cjk(c) else 1.25 for c in piece)))
    for t in entry.findall(nodes.Text):
        if isinstance(t.parent, nodes.literal):
            continue
        word = 0
        for c in str(t):
            word = 0 if (c.isspace() or is_cjk(c) or c in "/\u200b") else word + 1.15
            widest = max(widest, round(word))
    return widest


def size_tables(tree: nodes.document) -> int:
    """Give wide tables explicit relative column widths (and the full text width).

    rinohtype's automatic sizing of a table wider than the page can shrink a
    column to ~1 pt (one character per line, rows taller than the page).  Here
    every column first gets its minimum — its widest unbreakable piece, and its
    header up to six CJK characters — and the rest of the width is shared in
    proportion to how much longer each column's longest cell is.
    """
    sized = 0
    for table in tree.findall(nodes.table):
        if "colwidths-given" in table.get("classes", ()):
            continue
        tgroup = next(iter(table.findall(nodes.tgroup)), None)
        if tgroup is None:
            continue
        colspecs = [c for c in tgroup.children if isinstance(c, nodes.colspec)]
        n = len(colspecs)
        if not n:
            continue
        content = [4] * n
        minimum = [4] * n
        for row in tgroup.findall(nodes.row):
            in_head = isinstance(row.parent, nodes.thead)
            col = 0
            for entry in row.children:
                if col >= n:
                    break
                span = entry.get("morecols", 0) + 1
                if span == 1:
                    units = _units(entry.astext())
                    content[col] = max(content[col], min(units, 80))
                    minimum[col] = max(minimum[col], min(_unbreakable(entry), 48), min(units, 12) if in_head else 0)
                col += span
        pad = 3  # cell margins and padding (10 pt), in half-ems
        natural = sum(content) + pad * n
        if natural <= TABLE_UNITS * 0.9:
            continue  # fits as it is: rinohtype's own sizing is fine
        base = [m + pad for m in minimum]
        if sum(base) > TABLE_UNITS:
            # too wide even at the minimums: cap the widest columns (water-filling), so the
            # narrow ones keep their width and only the widest literal overflows
            lo, hi = 0.0, float(max(base))
            for _ in range(40):
                cap = (lo + hi) / 2
                lo, hi = (cap, hi) if sum(min(b, cap) for b in base) < TABLE_UNITS else (lo, cap)
            base = [min(b, lo) for b in base]
        extra = TABLE_UNITS - sum(base)
        want = [max(0, c - m) for c, m in zip(content, minimum)]
        if extra > 0 and sum(want):
            weights = [b + extra * w / sum(want) for b, w in zip(base, want)]
        else:
            weights = base
        for colspec, weight in zip(colspecs, weights):
            colspec["colwidth"] = max(1, round(10 * weight))
        table["classes"].append("colwidths-given")
        table["width"] = "100%"
        sized += 1
    return sized


# -- nodes rinohtype cannot render -------------------------------------------------------------


def plain_nodes(tree: nodes.document) -> None:
    """sphinx-design components and other foreign nodes → docutils nodes rinohtype knows."""
    from rinoh.frontend.rst import DocutilsNode

    known = DocutilsNode._mapping
    for node in list(tree.findall(nodes.Element)):
        if node.parent is None and node is not tree:
            continue
        if node.get("design_component") == "dropdown":
            title = next((c for c in node.children if isinstance(c, nodes.rubric)), None)
            body = [c for c in node.children if c is not title]
            adm = nodes.admonition("", classes=["dropdown", *node.get("classes", [])], ids=list(node["ids"]))
            heading = title.astext() if title is not None else "…"
            adm += nodes.title(heading, "", *(title.children if title is not None else [nodes.Text(heading)]))
            adm.extend(body)
            node.replace_self(adm)
            continue
        if node.tagname.replace("-", "_") in known:
            continue
        if isinstance(node, nodes.TextElement):
            inline_ctx = isinstance(node.parent, nodes.TextElement)
            new = (nodes.inline if inline_ctx else nodes.paragraph)("", "", *node.children,
                                                                    classes=node.get("classes", []))
        else:
            new = nodes.container("", *node.children, classes=node.get("classes", []))
        new["ids"] = list(node.get("ids", []))
        node.replace_self(new)


def _alias_styles(typeface) -> None:
    """Noto CJK has regular and bold only: answer every weight and slant with
    one of them (same font objects, so nothing is embedded twice), instead of
    rinohtype's per-lookup fallback warning."""
    from rinoh.font.style import FontSlant, FontWeight

    for width, slants in typeface.items():
        upright = slants[FontSlant.UPRIGHT]
        regular = upright[FontWeight.REGULAR]
        bold = upright.get(FontWeight.BOLD, regular)
        weights = {w: (bold if w >= 600 else regular) for w in FontWeight.values}
        for slant in FontSlant.values:
            slants[slant] = dict(weights)


# -- the builder --------------------------------------------------------------------------------


class BookRinohBuilder(RinohBuilder):
    """rinohtype's builder with the book's structure, fonts and caches."""

    name = "rinoh"

    def init(self) -> None:
        super().init()
        rinoh_patches.apply()
        self._timings: dict[str, float] = {}

    def assemble_doctree(self, indexfile, toctree_only):
        tree, docnames = super().assemble_doctree(indexfile, toctree_only)
        t0 = time.perf_counter()
        counts = shape_book(tree, self.config)
        from . import source_index

        source_index.append_to_pdf(self, tree, counts)
        plain_nodes(tree)
        size_tables(tree)
        breaks = rinoh_cjk.insert_breaks(tree)
        literal_breaks = rinoh_cjk.insert_literal_breaks(tree)
        self._counts = counts
        self._tree_chars = rinoh_cjk.text_chars(tree)
        logger.info(f"[vllm_book] PDF structure: {counts['parts']} parts, {counts['chapters']} chapters, "
                    f"{counts['appendices']} appendices; {breaks} CJK break opportunities, "
                    f"{literal_breaks} in long literals "
                    f"({time.perf_counter() - t0:.1f}s)")
        return tree, docnames

    def template_configuration(self, template, logger_):
        # the Chinese edition gets rinohtype's zh_CN language (目录, 图, 表, Sphinx's own admonition titles); a
        # Latin edition keeps rinohtype's built-in language of that code (Contents, Figure, Table)
        if (self.config.language or "zh_CN").startswith("zh"):
            rinoh_cjk.register_language(self.config.language or "zh_CN",
                                        {k: str(v) for k, v in admonitionlabels.items()})
        return super().template_configuration(template, logger_)

    def set_document_metadata(self, rinoh_document, metadata):
        from rinoh.paragraph import Paragraph

        super().set_document_metadata(rinoh_document, metadata)
        lab = labels(self.config)
        pin = _pin(self.config)
        today = datetime.date.today().isoformat()
        rinoh_document.metadata["date"] = lab["built"].format(date=today)
        rinoh_document.metadata["abstract"] = Paragraph(
            lab["pin"].format(version=pin.version, commit=pin.commit), style="title page pin")
        self._metadata_strings = [str(v) for v in rinoh_document.metadata.values() if isinstance(v, str)]
        self._metadata_strings.append(lab["pin"].format(version=pin.version, commit=pin.commit))

    def _prepare_fonts(self, rinoh_document) -> None:
        from rinoh.font import Typeface
        from rinoh.font.opentype import OpenTypeFont

        lang = rinoh_document.language
        extra = list(getattr(self, "_metadata_strings", []))
        if lang is not None:
            extra.extend(str(s) for s in lang.strings.values())
        extra.extend(v for lab in LABELS.values() for v in lab.values())
        # rinohtype's typography replaces characters while it sets the text (a Latin edition's ' becomes ’ and
        # "…" quotes become “…”), after the subset's characters were taken from the doctree
        extra.append("\u2018\u2019\u201c\u201d\u2013\u2014\u2026?")
        t0 = time.perf_counter()
        try:
            prepared = fonts.prepare(self._tree_chars | set("".join(extra)), cache_root(app_of(self.env)),
                                     log=lambda m: logger.info(f"[vllm_book] {m}"))
        except fonts.FontError as exc:
            from sphinx.errors import ExtensionError

            raise ExtensionError(str(exc)) from None
        for name, (regular, bold) in fonts.TYPEFACES.items():
            fonts_ = [OpenTypeFont(str(prepared.files[regular]))]
            if bold != regular:
                fonts_.append(OpenTypeFont(str(prepared.files[bold])))
            typeface = Typeface(name, *fonts_)
            _alias_styles(typeface)
            rinoh_patches.register_typeface(name, typeface)
        self._fallback_chars = prepared.fallback_chars
        self._timings["fonts"] = time.perf_counter() - t0

    def construct_rinohtype_document(self, document_data):
        document = super().construct_rinohtype_document(document_data)
        self._prepare_fonts(document)  # the character set is known now: subset and register
        self._rinoh_document = document
        return document

    def write_document(self, document_data):
        from rinoh.warnings import RinohWarning

        data = dict(document_data)
        target = data["target"]
        outfile = Path(self.outdir) / f"{target}.pdf"
        rtc = Path(self.outdir) / f"{target}.rtc"
        cached_rtc = cache_root(app_of(self.env)) / "rinoh" / f"{target}-{self.config.language or 'xx'}.rtc"
        if not rtc.is_file() and cached_rtc.is_file():
            shutil.copyfile(cached_rtc, rtc)  # page references of the last build: often one pass suffices
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RinohWarning)
            super().write_document(document_data)
        self._timings["render"] = time.perf_counter() - t0
        seen = set()
        layout = []
        for w in caught:
            if not issubclass(w.category, RinohWarning):
                continue
            msg = str(w.message).strip()
            if msg in seen:
                continue
            seen.add(msg)
            missing = MISSING_GLYPH.search(msg)
            if any(k in msg for k in LAYOUT_NOTES):
                layout.append(msg)
            elif missing and chr(int(missing.group(1), 16)) in getattr(self, "_fallback_chars", ()):
                continue  # Noto CJK lacks it, the fallback face (DejaVu Serif) has it
            else:
                logger.warning(f"rinohtype: {msg}", type="vllm_book", subtype="pdf")
        if layout:
            logger.info(f"[vllm_book] {len(layout)} PDF layout note(s) (overfull lines/tables):")
            for msg in layout:
                logger.info(f"    {msg}")
        if rtc.is_file():
            cached_rtc.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(rtc, cached_rtc)
        #: rendering passes of the last document written (rinoh_passes counts them)
        document = getattr(self, "_rinoh_document", None)
        self.rendering_passes = document.__dict__.get("_vllm_book_passes", 0) if document is not None else 0
        if outfile.is_file():
            logger.info(f"[vllm_book] wrote {outfile} ({outfile.stat().st_size / 1e6:.1f} MB; "
                        f"fonts {self._timings.get('fonts', 0):.1f}s, rinohtype {self._timings['render']:.1f}s "
                        f"in {self.rendering_passes} pass(es))")

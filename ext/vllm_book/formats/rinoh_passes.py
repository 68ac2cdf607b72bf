"""Fewer rendering passes for rinohtype 0.5.6: render the body first, stop when nothing read was stale.

Part of :mod:`.rinoh_patches` (applied by its :func:`~.rinoh_patches.apply`, same
version pin).  Why: ``rinoh.document.Document.render`` repeats a full rendering
pass until the page references and part page counts equal those of the
previous pass (or of the ``.rtc`` reference cache).  Without a cache — every
Read the Docs build, every fresh clone — that is at least two passes, and the
first one is wasted on a table of contents full of ``XX``: the book's only
page references are the TOC's (and the body restarts its page numbering, so
the body's layout does not depend on how long the TOC is).

``ordered-pass``
    ``Document._render_pages`` renders the document parts in *groups* (a part
    that starts its own page numbering plus the ``continue`` parts after it),
    the groups in reverse order: body first, then the front matter with the
    TOC, then the title.  Page numbers are unchanged (each group numbers its
    own pages, as before); the backend's page list and the PDF page tree are
    put back in document order before the file is written.
    ``Page.get_current_section`` (running headers, chapter title pages) stops
    at the first section not yet placed; a section of a part rendered later
    (the TOC's own title, when the body goes first) is now skipped instead of
    ending the search — it never belonged to this page's part anyway.

``converge``
    While a pass runs, every page reference it reads (``get_reference(id,
    'page')``) and every part page count (``DocumentPart.number_of_pages``) is
    logged with the value it got.  After the pass the log is compared with the
    final values: if every read was already final, the pass's output is exactly
    what another pass would produce, so rendering stops after it (rinohtype's
    own ``_single_pass`` switch) even without a cache.  Otherwise rinohtype's
    rule applies as before.  ``MAX_PASSES`` bounds the passes in any case (a
    layout that oscillates — a TOC entry moving across a page boundary and
    back — would never end).
"""

from __future__ import annotations

import sys
import time
from collections import deque

#: rendering passes before giving up on convergence (the first pass after a layout change
#: fills in page numbers, the second confirms them; more means the layout oscillates)
MAX_PASSES = 3

_MISSING = object()


def apply() -> None:
    _patch_reads()
    _patch_current_section()
    _patch_render_pages()


# -- reads: what a pass saw ---------------------------------------------------------------------


def _reads(document) -> dict | None:
    return document.__dict__.get("_vllm_book_reads")


def _patch_reads() -> None:
    from rinoh.document import Document
    from rinoh.reference import ReferenceType
    from rinoh.template import DocumentPart

    original_get_reference = Document.get_reference

    def get_reference(self, id, reference_type, *args, **kwargs):
        value = original_get_reference(self, id, reference_type, *args, **kwargs)
        reads = _reads(self)
        if reads is not None and reference_type == ReferenceType.PAGE:
            seen = reads["page"].setdefault(id, value)
            if seen != value:  # read twice with different values in one pass: never final
                reads["page"][id] = _MISSING
        return value

    get_reference.__wrapped__ = original_get_reference
    Document.get_reference = get_reference

    original_pages = DocumentPart.number_of_pages

    def number_of_pages(self):
        value = original_pages.fget(self)
        reads = _reads(self.document)
        if reads is not None:
            reads["count"].setdefault(self.template.name, value)
        return value

    DocumentPart.number_of_pages = property(number_of_pages, doc=original_pages.__doc__)


def stale_reads(document, part_page_counts: dict) -> list[str]:
    """The reads of the last pass whose value was not the final one (empty: converged)."""
    reads = _reads(document)
    if reads is None:
        return ["(no read log)"]
    stale = []
    for id, value in reads["page"].items():
        final = document.page_references.get(id, "XX")
        if value is _MISSING or value != final:
            stale.append(f"page of {id!r}: read {value!r}, final {final!r}")
    for name, value in reads["count"].items():
        final = part_page_counts[name].count if name in part_page_counts else 0
        if value != final:
            stale.append(f"page count of part {name!r}: read {value}, final {final}")
    return stale


# -- running headers ----------------------------------------------------------------------------


def get_current_section(self, level):
    """``rinoh.document.Page.get_current_section``; sections not yet placed are skipped
    until one of this page's part has been seen (the original stops at the first)."""
    document = self.document
    current_section = None
    seen_own_part = False
    for section in document._sections:
        if section.level != level or section.is_hidden(self):
            continue
        first_page = document.page_elements.get(section.get_id(document))
        if first_page is None:
            if seen_own_part:  # sections of one part are placed in order: none further on
                break
            continue
        if first_page.document_part is not self.document_part:
            continue
        seen_own_part = True
        if first_page is self:
            return section
        if first_page.number > self.number:
            break
        current_section = section
    return current_section


def _patch_current_section() -> None:
    from rinoh.document import Page

    get_current_section.__wrapped__ = Page.get_current_section
    Page.get_current_section = get_current_section


# -- the pass -----------------------------------------------------------------------------------


def _groups(document) -> list[list]:
    """The document parts in document order, grouped: a part that starts its own page
    numbering, then the parts that ``continue`` it."""
    groups: list[list] = []
    last_number_format = None
    for part_template in document.part_templates:
        part = part_template.document_part(document, last_number_format)
        if part is None:
            continue
        if not groups or part.get_config_value("page_number_format", document) != "continue":
            groups.append([])
        groups[-1].append((part_template, part))
        last_number_format = part.page_number_format
    return groups


def render_pages(self) -> dict:
    """``Document._render_pages``, group by group in reverse order; pages back in order."""
    from rinoh.document import PartPageCount
    from rinoh.style import StyleLog

    self.style_log = StyleLog(self.stylesheet)
    self.floats = set()
    self.sideways_floats = deque()
    self.registered_sideways_floats = set()
    self.placed_footnotes = set()
    self._start_time = time.time()
    self.__dict__["_vllm_book_reads"] = {"page": {}, "count": {}}

    backend_pages = self.backend_document.pages
    kids = self.backend_document.cos_document.catalog["Pages"]["Kids"]
    groups = _groups(self)
    spans: list[tuple[int, int]] = [(0, 0)] * len(groups)
    part_page_counts = {}
    for index in reversed(range(len(groups))):
        start = len(backend_pages)
        part_page_count = PartPageCount()
        for part_template, part in groups[index]:
            part_page_count += part.render(part_page_count.count + 1)
            part_page_counts[part_template.name] = part_page_count
        spans[index] = (start, len(backend_pages))
    if len(kids) != len(backend_pages) or any(k is not p.cos_page for k, p in zip(kids, backend_pages)):
        raise RuntimeError("vllm_book: rinohtype's page tree and page list disagree; cannot restore the page order")
    order = [i for start, end in spans for i in range(start, end)]
    backend_pages[:] = [backend_pages[i] for i in order]
    kids[:] = [p.cos_page for p in backend_pages]
    sys.stdout.write("\n")  # as rinohtype does after its progress indicator
    return part_page_counts


def _patch_render_pages() -> None:
    from rinoh.document import Document

    original = Document._render_pages

    def _render_pages(self):
        passes = self.__dict__.get("_vllm_book_passes", 0) + 1
        self.__dict__["_vllm_book_passes"] = passes
        t0 = time.perf_counter()
        result = render_pages(self)
        stale = stale_reads(self, result)
        verdict = "every page reference it read was final" if not stale else f"{len(stale)} stale read(s), e.g. {stale[0]}"
        print(f"[vllm_book] rendering pass {passes}: {len(self.backend_document.pages)} pages, "
              f"{time.perf_counter() - t0:.1f}s; {verdict}", flush=True)
        if not stale or passes >= MAX_PASSES:
            self._single_pass = True  # rinohtype's own switch: stop after this pass
        return result

    _render_pages.__wrapped__ = original
    Document._render_pages = _render_pages

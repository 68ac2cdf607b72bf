"""Every change to rinohtype's internals, in one module, for rinohtype 0.5.6 only.

rinohtype is pinned (``pyproject.toml``: ``rinohtype==0.5.6``).  :func:`apply`
refuses any other version: each patch below names the code it replaces, so an
upgrade means re-reading that code, adjusting the patch and the pin together.
Nothing else in the book touches rinohtype's private names.

Patches (all idempotent, applied once per process, only by the rinoh builder):

``cff-cid``
    ``rinoh.font.opentype.cff.TopDict.operators`` lacks the CID-keyed Top DICT
    operators (12,30)…(12,38), so loading Noto CJK fails with ``KeyError: (12, 30)``
    (then ``'loca'``).  rinohtype only needs to *skip* them: they are added as
    plain operators.  (The format-14 cmap subtable it cannot read either is
    removed from the fonts themselves, see :mod:`.fonts`.)

``cjk-justify``
    ``rinoh.paragraph.Line.typeset`` justifies by widening spaces only; a line
    of Chinese has none and stays ragged.  The wrapper first spreads the
    leftover width over the gaps next to CJK characters (at most 0.08 em each —
    below poppler's word-break threshold, so copy/paste and ``pdftotext`` see no
    spurious spaces), then lets the original widen the spaces with the rest —
    unless that would open a space wider than half an em (a long unbreakable
    literal pushed to the next line): such a line is left ragged instead.

``zwsp-cheap``
    Each U+200B break opportunity (inserted between CJK characters by
    :mod:`.rinoh_cjk`) becomes a ``ZeroWidthSpace`` line part whose
    ``GlyphsSpan`` looks up the space glyph and its kerning again.  The patched
    constructor reuses one empty span per text span.  It also makes a U+200B
    behave like a space at the start of a line (dropped): rinohtype appends it
    there as an empty part, and when the next word does not fit it restores the
    paragraph to before the U+200B and emits empty lines forever (seen in a
    table cell narrower than one character).

``image-cache``
    ``rinoh.image.ImageBase.render`` builds a new ``rinoh.backend.pdf.Image`` each
    time an image is laid out, and a PDF image keeps its file open until the
    document is written (its objects are read lazily).  Every re-layout of a page
    with a diagram therefore leaks a file descriptor: a 39-chapter book exhausted
    20,000 of them ("Too many open files").  The patch makes ``Image`` return one
    instance per file (keyed by resolved path, size and mtime), so each file is
    opened once; the same XObject placed on several pages is written once.

``style-log``
    ``rinoh.style.StyleLog`` records every placed element and writes a
    ``<target>.stylelog`` debug file (≈14 % of the rendering time of a large
    book).  Switched off unless ``VLLM_BOOK_RINOH_STYLELOG=1``.

``font-cache``
    ``rinoh.text.SingleStyledTextBase.font`` resolves typeface → font for every word
    (style lookups for typeface, weight, slant, width, then ``Typeface.get_font``).
    The result is memoised per styled text and container document.

``tounicode``
    The PDF's glyph → text map: the lowest code point of a shared glyph wins (rinohtype picks the highest:
    U+2011 for every ``-``), and ligature glyphs (``fi``, ``fl`` …) map to their letters (rinohtype leaves
    them out: "data flow" copied as "data ow").  :mod:`.rinoh_tounicode`.

``lexer-filters``
    ``rinoh.highlight.highlight_block`` adds the ``tokenmerge`` filter to the
    lexer for every code block, and the Sphinx frontend caches one lexer per
    language: after n blocks each token runs through n nested filters
    (quadratic time; ``RecursionError`` past ~450 Python blocks).  The wrapper
    hands it a copy of the cached lexer with its own filter list.

``container-document``
    ``rinoh.layout.Container.document`` walks the whole parent chain
    (``document_part`` → … → page) on every access — ~15 % of the rendering
    time of the synthetic book.  Memoised per container (a container belongs to
    one document for its whole life); ``Container.document_part`` too (3 % of
    the real chapters' rendering: a container is created and placed while its
    part renders, the parts one after the other).

``style-cache``
    ``rinoh.style.Styled.get_style(attribute, container)`` only reads
    ``container.document`` but is memoised per *container*, so each new line or
    page container misses and re-runs the selector matching.  Memoised per
    (styled, attribute, document) instead.

``passes``
    ``rinoh.document.Document._render_pages``: render the body before the table of
    contents and stop as soon as no page reference read during a pass was stale,
    so a build without a reference cache renders once; at most ``MAX_PASSES``.
    In :mod:`.rinoh_passes` (its own module: it replaces a whole method).

``table-guard``
    ``rinoh.table.Table.render`` cannot split a row; a row taller than a page
    is retried on the next page forever.  After three fresh pages without
    progress the build fails with the table's file:line.

``linenos``
    rinohtype ignores a ``literal_block``'s ``linenos``: ``src-code`` excerpts lost
    the source line numbers the HTML edition shows.  The Sphinx frontend's
    ``Literal_Block.build_flowable`` wrapper prefixes every line of such a block
    with its number (from ``highlight_args['linenostart']``), right-aligned and
    styled as a comment token.  (They are part of the text: copying lines out
    of the PDF copies the numbers too, as in a printed listing.)

``page-release``
    rinohtype keeps every laid-out page whole until the document is written: each
    container with its canvas — a copy of the PDF content of everything inside
    it, so a page's content is held once per nesting level — its lines, glyph
    spans and child containers (≈2.5 MB per page of this book).  Once
    ``Page.place`` has copied it all into the page's own canvas (the one that is
    written) and registered fonts, images and annotations with the backend page,
    only the page object itself is read again (its number and part, for page
    references and running headers).  The patch then drops the children of every
    container below the page and their canvases: a late access to one fails
    loudly (``AttributeError``) instead of writing output nowhere.

``lookup-cache``
    A style attribute that no style of an element sets falls back to its
    parent's (text → enclosing text → paragraph …):
    ``rinoh.style.StyleSheet._get_value_lookup`` recurses into the parent, and
    again for every sibling — each word of a paragraph walks the same chain.
    The patched method memoises that fall-back result on the parent, per
    (attribute, style sheet, document), including "no style sets it"
    (``DefaultValueException``).  Sound for the same reason as rinohtype's own
    memoisation: the lookup reads only the parent's style, its matches
    (``Document.get_matches``, memoised by rinohtype for the document's life),
    the style sheet's values (``get_value``, memoised by rinohtype) and, in
    turn, its own parent — none of which changes once the document is built.
    A style that does not set the attribute is memoised too (``RuleSet.get_value``'s ``@cached`` keeps values
    only, so every such lookup walked the style's base chain and raised ``DefaultValueException`` through it),
    and the "nobody sets it" outcome travels up the chain of parents and out of ``get_value_for`` as a marker
    instead of an exception per level; the public ``_get_value_lookup`` still raises it.  Same answers, same
    order of matches; first six chapters: rendering pass 20.9 → 17.4 s, PDF identical.

``paragraph-guard``
    A paragraph rinohtype cannot set (a glyph no face has, an internal error of rinohtype's line breaker)
    fails naming its source location and first words instead of a bare traceback.

``title-guard``
    rinohtype's guard against a self-referring title outlived a dropped layout attempt and turned the second
    layout of a wrapped table-of-contents entry into a "circular" reference (a crash on long Latin titles);
    the guard now holds only while the title is being expanded.  :mod:`.rinoh_references`.

``table-sizing``
    ``Table._size_columns`` lays every cell out at width 0 and at infinite width before it knows whether it
    needs either; the copy measures only what its result reads (nothing for a 100 %-wide table with relative
    column widths).  Same widths, same formulas.  :mod:`.rinoh_tables`.

``table-index``
    A row's position in its table (asked by every cell, for its column and for style selectors) is remembered
    and checked in O(1) instead of found by scanning the table from the top.  :mod:`.rinoh_tables`.

``toc-margin``
    A contents title breaks 2.55 em short of the right edge (LaTeX's ``\\@tocrmarg``), so its page number
    never lands glued to the last word ("…parallelism11", rinohtype's "Tab space exceeded").
    :mod:`.rinoh_toc`.

``page-guard``
    A flowable that fits on no page (an image taller than the text with its
    caption after it, or with the heading kept with it) makes rinohtype start a
    new page for it forever — until memory runs out.  After ``MAX_EMPTY_PAGES``
    consecutive pages with an empty body, or ``MAX_STUCK_PAGES`` after which the
    body's rendering state (:func:`state_signature`: each nested flowable and
    its counters — paragraph span, table row, group index) did not move, the
    build stops, naming the file and line it is stuck at.

``progress``
    ``rinoh.document.Document.progress`` redraws a progress bar on stdout for
    every flowable; a no-op here (Sphinx prints its own progress).

Helpers that reach into rinohtype's registry: :func:`register_typeface`
(re-registers a name; rinohtype's own ``register_typeface`` refuses a second
registration, which a second build in one process needs).
"""

from __future__ import annotations

import contextlib
import os
import re
import time

from sphinx.errors import ExtensionError

from . import rinoh_references, rinoh_tables, rinoh_toc, rinoh_tounicode

RINOH_VERSION = "0.5.6"
CJK_GAP_MAX_EM = 0.08
MAX_SPACE_STRETCH_EM = 0.5
_APPLIED: set[str] = set()

_CJK = re.compile(r"[\u2e80-\u2fff\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                  r"\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0002fa1f]")


def check_version() -> None:
    import rinoh

    if rinoh.__version__ != RINOH_VERSION:
        raise ExtensionError(
            f"vllm_book.formats patches rinohtype {RINOH_VERSION} internals but rinohtype {rinoh.__version__} is "
            f"installed; install rinohtype=={RINOH_VERSION} (pyproject.toml pins it) or port "
            "ext/vllm_book/formats/rinoh_patches.py to the new version")


#: ``VLLM_BOOK_RINOH_OFF=name,name``: leave these patches out (A/B builds of the speed and memory
#: patches, e.g. ``page-release``, ``style-cache``; never in a real build)
OPTIONAL = ("font-cache", "container-document", "style-cache", "image-cache", "page-release", "lookup-cache",
            "table-sizing", "table-index")


def apply() -> None:
    check_version()
    off = {n.strip() for n in os.environ.get("VLLM_BOOK_RINOH_OFF", "").split(",") if n.strip()}
    unknown = off - set(OPTIONAL)
    if unknown:
        raise ExtensionError(f"VLLM_BOOK_RINOH_OFF names {', '.join(sorted(unknown))}; only these patches can be "
                             f"left out: {', '.join(OPTIONAL)}")
    for name, patch in (("cff-cid", _patch_cff_cid), ("cjk-justify", _patch_cjk_justify),
                        ("zwsp-cheap", _patch_zwsp), ("style-log", _patch_style_log),
                        ("font-cache", _patch_font_cache), ("tounicode", rinoh_tounicode.apply),
                        ("progress", _patch_progress), ("lexer-filters", _patch_highlight),
                        ("linenos", _patch_linenos),
                        ("container-document", _patch_container_document),
                        ("style-cache", _patch_style_cache), ("passes", _patch_passes),
                        ("table-guard", _patch_table_guard), ("image-cache", _patch_image_cache),
                        ("page-release", _patch_page_release), ("page-guard", _patch_page_guard),
                        ("lookup-cache", _patch_lookup_cache), ("paragraph-guard", _patch_paragraph_guard),
                        ("title-guard", rinoh_references.apply), ("toc-margin", rinoh_toc.apply),
                        ("table-sizing", rinoh_tables.apply), ("table-index", rinoh_tables.apply_index)):
        if name not in _APPLIED and name not in off:
            patch()
            _APPLIED.add(name)


# -- cff-cid ------------------------------------------------------------------------------------


def _patch_cff_cid() -> None:
    from rinoh.font.opentype import cff

    number, array, sid = cff.number, cff.array, cff.sid
    cff.TopDict.operators.update({
        (12, 30): cff.Operator("ROS", array),
        (12, 31): cff.Operator("CIDFontVersion", number, 0),
        (12, 32): cff.Operator("CIDFontRevision", number, 0),
        (12, 33): cff.Operator("CIDFontType", number, 0),
        (12, 34): cff.Operator("CIDCount", number, 8720),
        (12, 35): cff.Operator("UIDBase", number),
        (12, 36): cff.Operator("FDArray", number),
        (12, 37): cff.Operator("FDSelect", number),
        (12, 38): cff.Operator("FontName", sid),
    })


# -- cjk-justify --------------------------------------------------------------------------------


def is_cjk(char: str) -> bool:
    return bool(char) and _CJK.match(char) is not None


def spread_cjk(line) -> bool:
    """Widen the gaps next to CJK glyphs of a justified *line* (see module docstring).

    Returns False when the line should rather stay ragged: what is left for
    its spaces would open gaps wider than ``MAX_SPACE_STRETCH_EM``.
    """
    from rinoh.paragraph import GlyphsSpan

    # the original drops trailing spaces first; do the same so the widths agree
    while len(line) > 0:
        last = line[-1]
        if isinstance(last, GlyphsSpan) and last and last.ends_with_space:
            line.cursor -= last.space.width
            line.pop()
        else:
            break
    extra = line.width - line.cursor
    if extra <= 1e-3:
        return True
    flat = []
    spaces = 0
    for part in line:
        if not isinstance(part, GlyphsSpan):
            flat.append(None)  # inline flowable: no gap across it
            continue
        space = part.space
        for glyph in list.__iter__(part):
            if glyph is space:
                spaces += 1
                flat.append(None)
            elif glyph.char in ("\t", "\n"):
                flat.append(None)
            else:
                flat.append(glyph)
    gaps = []
    for a, b in zip(flat, flat[1:]):
        if a is not None and b is not None and (is_cjk(a.char[-1]) or is_cjk(b.char[0])):
            gaps.append((a, b))
    em = next((g.width for g in flat if g is not None and is_cjk(g.char[-1])), None)
    total = 0.0
    if gaps:
        per_unit = extra / (len(gaps) + spaces)
        for a, b in gaps:
            gap_em = a.width if is_cjk(a.char[-1]) else b.width  # a full-width glyph is 1 em wide
            add = min(per_unit, CJK_GAP_MAX_EM * gap_em)
            a.width += add
            total += add
        line.cursor += total
    if em is None:
        return True  # no CJK: plain Latin justification
    rest = extra - total
    return rest <= 1e-3 or (spaces > 0 and rest / spaces <= MAX_SPACE_STRETCH_EM * em)


def _patch_cjk_justify() -> None:
    from rinoh.paragraph import Line, TextAlign

    original = Line.typeset

    def typeset(self, container, text_align, last_line=False):
        if text_align == TextAlign.JUSTIFY and not last_line and not self._current_tab:
            if not spread_cjk(self):
                text_align = "left"
        return original(self, container, text_align, last_line)

    typeset.__wrapped__ = original
    Line.typeset = typeset


# -- zwsp-cheap ---------------------------------------------------------------------------------


def _patch_zwsp() -> None:
    from rinoh.paragraph import GlyphsSpan, SpaceException, SpecialCharacter, ZeroWidthSpace

    cache: dict[int, tuple[object, object]] = {}

    def __init__(self, span, chars_to_glyphs):
        # one shared, empty GlyphsSpan per (span, glyph function): it is never mutated
        # (no glyphs, no spaces to widen), so sharing it is safe
        key = id(chars_to_glyphs)
        hit = cache.get(key)
        if hit is None or hit[0] is not chars_to_glyphs:
            if len(cache) > 4096:
                cache.clear()
            hit = (chars_to_glyphs, GlyphsSpan(span, chars_to_glyphs))
            cache[key] = hit
        self.glyphs_span = hit[1]

    def __getitem__(self, index):
        # behave like a space at the start of a line: Line.append_word drops it there.
        # Appended to an empty line, the original makes the line "non-empty" with
        # nothing in it; a following word that does not fit then restores the
        # paragraph state to before the ZWSP and typesets an empty line — forever.
        raise SpaceException

    ZeroWidthSpace.__init__ = __init__
    ZeroWidthSpace.__getitem__ = __getitem__
    ZeroWidthSpace.__doc__ = (SpecialCharacter.__doc__ or "") + " (vllm_book: shared empty span, dropped at line start)"


# -- style-log ----------------------------------------------------------------------------------


def _patch_style_log() -> None:
    if os.environ.get("VLLM_BOOK_RINOH_STYLELOG") == "1":
        return
    from rinoh.style import StyleLog

    StyleLog.log_styled = lambda self, *args, **kwargs: None
    StyleLog.write_log = lambda self, *args, **kwargs: None


# -- font-cache ---------------------------------------------------------------------------------


def _patch_font_cache() -> None:
    from rinoh.text import SingleStyledTextBase

    original = SingleStyledTextBase.font

    def font(self, container):
        document = container.document
        try:
            cached = self.__dict__["_vllm_book_font"]
            if cached[0] is document:
                return cached[1]
        except KeyError:
            pass
        result = original(self, container)
        self.__dict__["_vllm_book_font"] = (document, result)
        return result

    font.__wrapped__ = original
    SingleStyledTextBase.font = font


# -- image-cache -------------------------------------------------------------------------------


def _patch_image_cache() -> None:
    from pathlib import Path

    from rinoh.backend import pdf

    original = pdf.Image
    cache: dict[tuple[str, int, int], object] = {}

    def image(filename_or_file):
        try:
            path = Path(filename_or_file).resolve()
            stat = path.stat()
        except (TypeError, OSError):  # a file object, or a path rinohtype reports itself
            return original(filename_or_file)
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in cache:
            cache[key] = original(filename_or_file)
        return cache[key]

    image.__wrapped__ = original
    pdf.Image = image


# -- page-release ------------------------------------------------------------------------------


def release_placed(container) -> int:
    """Drop the child containers and canvases below *container* (a placed page); returns how many."""
    released = 0
    todo = list(container.children)
    while todo:
        child = todo.pop()
        todo.extend(child.children)
        child.children = ()  # an append to a finished page raises instead of vanishing
        child.__dict__.pop("canvas", None)  # Container.__getattr__ raises AttributeError for it
        placed = getattr(child, "_placed_styleds", None)
        if placed is not None:
            child._placed_styleds = None
        released += 1
    container.children = ()
    return released


def _patch_page_release() -> None:
    from rinoh.document import Page

    original = Page.place

    def place(self):
        original(self)
        release_placed(self)

    place.__wrapped__ = original
    Page.place = place


# -- lookup-cache ------------------------------------------------------------------------------


#: what ``RuleSet.get_value`` raised, memoised: the style does not set the attribute (``DefaultValueException``),
#: or its base is ``NEXT_STYLE`` / ``PARENT_STYLE``
_DEFAULT, _NEXT, _PARENT = object(), object(), object()


def _patch_lookup_cache() -> None:
    from rinoh.attribute import DefaultValueException, RuleSet, Var
    from rinoh.style import NextMatchException, ParentStyleException, Style, StyleSheet

    def sheet_value(self, name, attribute):
        """``self.get_value(name, attribute)``, the exceptions it raises memoised as markers.  rinohtype's
        ``@cached`` keeps only values, so every lookup of an attribute a style does not set walked the style's
        base chain again and raised through it — most lookups, since most attributes come from a parent."""
        memo = self.__dict__.get("_vllm_book_values")
        if memo is None:
            memo = self.__dict__["_vllm_book_values"] = {}
        key = (name, attribute)
        try:
            return memo[key]
        except KeyError:
            pass
        try:
            value = self.get_value(name, attribute)
        except DefaultValueException:
            value = _DEFAULT
        except NextMatchException:
            value = _NEXT
        except ParentStyleException:
            value = _PARENT
        memo[key] = value
        return value

    def lookup(self, styled, attribute, document):
        """StyleSheet._get_value_lookup, branch for branch, except that where it raises
        ``DefaultValueException`` this returns ``_DEFAULT`` (so a chain of parents that sets nothing is walked
        without an exception per level), the style values come from sheet_value and the fall back to the
        parent's style is memoised (parent_lookup)."""
        if isinstance(styled.style, Style) and attribute in styled.style:
            return styled.style[attribute]
        outcome = _DEFAULT                # no matching styles define attribute
        for match in document.get_matches(styled):
            if match.stylesheet:          # style is defined
                value = sheet_value(self, match.style_name, attribute)
                if value is _NEXT:        # NEXT_STYLE: the next match decides
                    continue
                outcome = value
                break
        if outcome is _DEFAULT:           # fallback to default style
            if not styled.fallback_to_parent(attribute):
                return _DEFAULT
        elif outcome is not _PARENT:      # PARENT_STYLE falls back to the parent's style
            return outcome
        return parent_lookup(self, styled.parent, attribute, document)

    def parent_lookup(self, parent, attribute, document):
        """``lookup(parent, …)``, memoised on *parent* per (attribute, style sheet, document)."""
        if parent is None:  # as the original: fails the same way
            return lookup(self, parent, attribute, document)
        cache = parent.__dict__.get("_vllm_book_lookups")
        if cache is None:
            cache = parent.__dict__["_vllm_book_lookups"] = {}
        hit = cache.get(attribute)
        if hit is not None and hit[0] is self and hit[1] is document:
            return hit[2]
        value = lookup(self, parent, attribute, document)
        cache[attribute] = (self, document, value)
        return value

    def _get_value_lookup(self, styled, attribute, document):
        value = lookup(self, styled, attribute, document)
        if value is _DEFAULT:
            raise DefaultValueException
        return value

    def get_value_for(self, configurable, attribute, document):
        # RuleSet.get_value_for, for style sheets: the default value without raising and catching first
        value = lookup(self, configurable, attribute, document)
        if value is _DEFAULT:
            value = configurable.configuration_class._get_default(attribute)
        if isinstance(value, Var):
            value = self.get_variable(configurable.configuration_class, attribute, value)
        return value

    _get_value_lookup.__wrapped__ = StyleSheet._get_value_lookup
    StyleSheet._get_value_lookup = _get_value_lookup
    get_value_for.__wrapped__ = RuleSet.get_value_for
    StyleSheet.get_value_for = get_value_for


# -- page-guard --------------------------------------------------------------------------------

#: consecutive pages with nothing in their body before the build stops (a chapter that must start on
#: a right-hand page leaves one blank page; more means a flowable that fits on no page)
MAX_EMPTY_PAGES = 5
#: consecutive pages after which the body's rendering state is the same as after the page before
#: (nothing consumed: a heading kept with a figure that fit on no page together is placed and
#: withdrawn again on every new page)
MAX_STUCK_PAGES = 5


class NoProgress(ExtensionError):
    """rinohtype keeps starting pages without placing anything on them."""


def state_signature(state) -> tuple:
    """Where a chain's rendering state points: each nested state's type, flowable and counters."""
    out = []
    for _ in range(200):
        if state is None:
            break
        items = [type(state).__name__, id(getattr(state, "flowable", None)), id(getattr(state, "_first_word", None))]
        items += [(k, v) for k, v in sorted(vars(state).items())
                  if v is None or isinstance(v, (bool, int, float, str))]
        items.append(len(getattr(state, "flowables", ()) or ()))
        out.append(tuple(items))
        state = (getattr(state, "first_flowable_state", None) or getattr(state, "nested_flowable_state", None)
                 or getattr(state, "content_flowable_state", None))
    return tuple(out)


def _patch_page_guard() -> None:
    from rinoh.document import Page

    original = Page.render

    def render(self):
        try:
            return original(self)
        finally:
            part = self.document_part
            run = part.__dict__.get("_vllm_book_empty_run", 0) + 1 if self._empty else 0
            part.__dict__["_vllm_book_empty_run"] = run
            chain = getattr(part, "chain", None)
            signature = state_signature(getattr(chain, "_state", None)) if chain is not None else None
            previous = part.__dict__.get("_vllm_book_state")
            stuck = part.__dict__.get("_vllm_book_stuck_run", 0) + 1 if signature and signature == previous else 0
            part.__dict__["_vllm_book_state"] = signature
            part.__dict__["_vllm_book_stuck_run"] = stuck
            if run > MAX_EMPTY_PAGES or stuck > MAX_STUCK_PAGES:
                what = "with nothing on them" if run > MAX_EMPTY_PAGES else "without getting further"
                raise NoProgress(
                    f"page {self.number} of the PDF: {max(run, stuck)} pages in a row {what}, stuck at "
                    f"{_stuck_at(part)}: an element there fits on no page (an image taller than the page with its "
                    "caption or the heading kept with it, a table row, a code line); rinohtype would add pages "
                    "forever. Make it smaller or split it") from None

    render.__wrapped__ = original
    Page.render = render


def _stuck_at(part) -> str:
    """file:line of the innermost flowable the part's chain is about to flow (from its saved state)."""
    state = getattr(part.chain, "_state", None)
    where = "an unknown place"
    for _ in range(100):
        if state is None:
            break
        flowable = getattr(state, "flowable", None) or getattr(state, "groupedflowables", None)
        loc = _location(flowable) if flowable is not None else "a table"
        if loc != "a table" and not loc.startswith("None"):
            where = loc
        state = getattr(state, "first_flowable_state", None) or getattr(state, "content_flowable_state", None)
    return where


# -- lexer-filters ------------------------------------------------------------------------------


def _patch_highlight() -> None:
    import copy

    from rinoh import highlight

    original = highlight.highlight_block

    def highlight_block(language, text, lexer_getter):
        get_lexer = lexer_getter or (lambda text, lang: highlight.get_lexer_by_name(lang))

        def fresh_filters(text, lang):
            base = get_lexer(text, lang)
            lexer = copy.copy(base)
            lexer.filters = list(base.filters)  # the original appends 'tokenmerge' to this copy only
            return lexer

        return original(language, text, fresh_filters)

    highlight_block.__wrapped__ = original
    highlight.highlight_block = highlight_block


# -- linenos ------------------------------------------------------------------------------------


def numbered_tokens(tokens, start: int):
    """(text, token type) pairs → the same with a line-number pair at the start of every line."""
    from pygments.token import Comment

    pairs = [(text, ttype) for text, ttype in tokens if text]
    total = "".join(text for text, _ in pairs).rstrip("\n").count("\n") + 1
    width = len(str(start + total - 1))
    number = start
    out = [(f"{number:>{width}}  ", Comment)]
    for i, (text, ttype) in enumerate(pairs):
        pieces = text.split("\n")
        for j, piece in enumerate(pieces):
            if j:
                out.append(("\n", ttype))
                rest_empty = j == len(pieces) - 1 and not piece and i == len(pairs) - 1
                if not rest_empty:
                    number += 1
                    out.append((f"{number:>{width}}  ", Comment))
            if piece:
                out.append((piece, ttype))
    return out


def _patch_linenos() -> None:
    from pygments.token import Text
    from rinoh.frontend.sphinx.nodes import Literal_Block
    from rinoh.highlight import Token
    from rinoh.text import MixedStyledText

    original = Literal_Block.build_flowable

    def build_flowable(self):
        block = original(self)
        if not self.get("linenos"):
            return block
        start = int((self.get("highlight_args") or {}).get("linenostart", 1))
        def flat(item):
            if isinstance(item, MixedStyledText):
                for child in item:
                    yield from flat(child)
            else:
                yield item.text(None), getattr(item, "type", Text)

        tokens = list(flat(block.content))
        numbered = MixedStyledText([Token(text, ttype) for text, ttype in numbered_tokens(tokens, start)])
        numbered.parent = block
        block.content = numbered
        return block

    build_flowable.__wrapped__ = original
    Literal_Block.build_flowable = build_flowable


# -- container-document -------------------------------------------------------------------------


def _patch_container_document() -> None:
    from rinoh.layout import Container

    original = Container.document

    def document(self):
        # a container never moves to another document: walk the parent chain once
        try:
            return self.__dict__["_vllm_book_document"]
        except KeyError:
            result = self.__dict__["_vllm_book_document"] = original.fget(self)
            return result

    Container.document = property(document, doc=original.__doc__)

    original_part = Container.document_part

    def document_part(self):
        # likewise the document part: a container is created and placed while its part renders (parts render
        # one after the other); a VirtualContainer re-parented by place_at stays in the part being rendered
        try:
            return self.__dict__["_vllm_book_part"]
        except KeyError:
            result = self.__dict__["_vllm_book_part"] = original_part.fget(self)
            return result

    Container.document_part = property(document_part, doc=original_part.__doc__)


# -- style-cache --------------------------------------------------------------------------------


def _patch_style_cache() -> None:
    from rinoh.style import Styled

    original = Styled.get_style

    def get_style(self, attribute, container):
        # the value depends on the document only (the original reads container.document);
        # rinohtype memoises per *container*, so every new page/line container misses
        document = container.document
        cache = self.__dict__.get("_vllm_book_styles")
        if cache is None:
            cache = self.__dict__["_vllm_book_styles"] = {}
        hit = cache.get(attribute)
        if hit is not None and hit[0] is document:
            return hit[1]
        value = self.get_config_value(attribute, document)
        cache[attribute] = (document, value)
        return value

    get_style.__wrapped__ = original
    Styled.get_style = get_style


# -- passes -------------------------------------------------------------------------------------


def _patch_passes() -> None:
    from . import rinoh_passes

    rinoh_passes.apply()


# -- table-guard --------------------------------------------------------------------------------


class TableTooTall(ExtensionError):
    """A table row does not fit on an empty page: rinohtype would retry forever."""


def _patch_table_guard() -> None:
    from rinoh.layout import EndOfContainer
    from rinoh.table import Table

    original = Table.render

    def render(self, container, last_descender, state, space_below=0, **kwargs):
        start = state.body_row_index
        t0 = time.perf_counter()
        try:
            return original(self, container, last_descender, state, space_below=space_below, **kwargs)
        except EndOfContainer as eoc:
            stuck = self.__dict__.setdefault("_vllm_book_stuck", {})
            progressed = getattr(eoc.flowable_state, "body_row_index", start) != start
            if progressed:
                stuck.clear()
            else:
                stuck[start] = stuck.get(start, 0) + 1
                if stuck[start] >= 3:  # three fresh pages in a row without placing a row
                    where = _location(self)
                    raise TableTooTall(
                        f"{where}: table row {start + 1} is taller than a page of the PDF; rinohtype cannot "
                        "split a row. Shorten the cells, split the row, or give the table fewer/wider "
                        "columns (e.g. move long text out of the table)") from None
            raise
        finally:
            if os.environ.get("VLLM_BOOK_DEBUG_TABLES"):
                print(f"[vllm_book] table {_location(self)} rows {start}+: {time.perf_counter() - t0:.2f}s",
                      flush=True)

    render.__wrapped__ = original
    Table.render = render


def _patch_paragraph_guard() -> None:
    """A paragraph rinohtype cannot set fails with its source location and first words, not a bare traceback."""
    from rinoh.font import MissingGlyphException
    from rinoh.paragraph import ParagraphBase

    original = ParagraphBase.render

    def render(self, container, descender, state=None, **kwargs):
        try:
            return original(self, container, descender, state=state, **kwargs)
        except (RuntimeError, MissingGlyphException) as exc:
            try:
                text = self.to_string(container)
            except Exception:  # noqa: BLE001 - the text is only a hint
                text = ""
            raise ExtensionError(f"rinohtype could not set the paragraph at {_location(self)} "
                                 f"({type(exc).__name__}: {exc}); it begins {text[:120]!r}") from exc

    render.__wrapped__ = original
    ParagraphBase.render = render


def _location(flowable) -> str:
    source = getattr(flowable, "source", None)
    try:
        path, line, _tag = source.location
        return f"{path}:{line}" if line else str(path)
    except (AttributeError, ValueError, TypeError):
        return "a table"


# -- progress -----------------------------------------------------------------------------------


def _patch_progress() -> None:
    from rinoh.document import Document

    Document.progress = lambda self, flowable, container: None


# -- registry -----------------------------------------------------------------------------------


def register_typeface(name: str, typeface) -> None:
    """Register (or replace) a typeface under *name* in rinohtype's dynamic registry."""
    from rinoh import resource

    registry = resource._DISTRIBUTION._typefaces
    registry.pop(name, None)
    resource._DISTRIBUTION.register_typeface(name, typeface)

"""``tounicode``: the PDF's glyph → text map (``/ToUnicode``), so that text copied from the PDF is the text set.

rinohtype 0.5.6 writes the map (``rinoh.backend.pdf.cos.ToUnicode``) by inverting the font's ``cmap``, with two
faults this patch fixes:

* a glyph shared by several code points gets the *highest* one: copied text has U+2011 for every ``-`` and
  U+00A0 for every space.  Here the lowest code point wins.
* a ligature glyph has no code point at all ("TODO: handle ligatures"): the Noto CJK faces join ``fi``, ``fl``,
  ``ff``, ``ffi`` and ``ffl`` in Latin text, and a PDF viewer copies "data flow" as "data ow".  Here every
  ligature of the font's ``liga`` feature (read from its ``GSUB`` table with fontTools, recursively, so a
  ligature built on a ligature works too) maps to the characters it stands for.  rinohtype forms ligatures from
  that same feature (``OpenTypeFont.get_ligature``), so every ligature it can set is covered.

The map is written when a font is first registered with the PDF (``rinoh.backend.pdf.Document.register_font``); the patch
notes which font that is while the original runs, so ``ToUnicode`` can read that font's ligatures.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

_REGISTERING: list[Any] = []


@lru_cache(maxsize=64)
def ligature_text(filename: str) -> dict[int, str]:
    """Glyph id → the text of each ligature in the ``liga`` feature of the font file *filename*."""
    from fontTools.ttLib import TTFont

    font = TTFont(filename, lazy=True)
    if "GSUB" not in font or font["GSUB"].table.LookupList is None:
        return {}
    gsub = font["GSUB"].table
    text: dict[str, str] = {}
    for name, cp in sorted(((n, cp) for cp, n in font.getBestCmap().items()), key=lambda pair: -pair[1]):
        text[name] = chr(cp)  # descending, so the lowest code point of a shared glyph wins
    pending: list[tuple[str, list[str]]] = []
    for record in gsub.FeatureList.FeatureRecord if gsub.FeatureList else ():
        if record.FeatureTag != "liga":
            continue
        for index in record.Feature.LookupListIndex:
            lookup = gsub.LookupList.Lookup[index]
            for sub in lookup.SubTable:
                sub = sub.ExtSubTable if lookup.LookupType == 7 else sub
                for first, ligatures in getattr(sub, "ligatures", {}).items():
                    pending.extend((lig.LigGlyph, [first, *lig.Component]) for lig in ligatures)
    found: dict[str, str] = {}
    while pending:  # a ligature whose parts are ligatures resolves once its parts have
        rest = []
        for glyph, parts in pending:
            if all(p in text or p in found for p in parts):
                found.setdefault(glyph, "".join(found.get(p) or text[p] for p in parts))
            else:
                rest.append((glyph, parts))
        if len(rest) == len(pending):
            break  # parts with no text at all (a glyph no character maps to): nothing to copy for them
        pending = rest
    return {font.getGlyphID(glyph): chars for glyph, chars in found.items()}


def apply() -> None:
    from rinoh.backend.pdf import Document as PDFDocument, cos

    register_font = PDFDocument.register_font

    def register(self: Any, font: Any) -> Any:
        _REGISTERING.append(font)
        try:
            return register_font(self, font)
        finally:
            _REGISTERING.pop()

    def __init__(self: Any, mapping: dict[int, int], filter: Any = None) -> None:  # noqa: A002 (rinohtype's name)
        cos.Stream.__init__(self, filter=filter)
        glyph_text = {glyph: chr(cp) for cp, glyph in sorted(mapping.items(), reverse=True)}
        font = _REGISTERING[-1] if _REGISTERING else None
        if getattr(font, "filename", None):
            glyph_text.update(ligature_text(str(font.filename)))  # "fi", not U+FB01, even where the cmap has it
        with self._begin_resource("/CIDInit /ProcSet findresource"):
            with self._begin_resource("12 dict"):
                with self._begin("cmap"):
                    info = cos.Dictionary()
                    info["Registry"] = cos.String("Adobe")
                    info["Ordering"] = cos.String("UCS")
                    info["Supplement"] = cos.Integer("0")
                    self._def("CIDSystemInfo", info)
                    self._def("CMapName", cos.Name("Adobe-Identity-UCS"))
                    self._def("CMapType", cos.Integer(2))
                    with self._begin("codespacerange", 1):
                        self._value(0x0000)
                        self._value(0xFFFF)
                        self.write(b"\n")
                    glyphs = sorted(glyph_text)
                    for start in range(0, len(glyphs), 100):  # at most 100 entries per bfchar block (PDF spec)
                        block = glyphs[start:start + 100]
                        with self._begin("bfchar", len(block)):
                            for glyph in block:
                                self._value(glyph)
                                self._hex(glyph_text[glyph].encode("utf-16-be"))
                                self.write(b"\n")
                self.print("CMapName currentdict /CMap defineresource pop")

    register.__wrapped__ = register_font
    __init__.__wrapped__ = cos.ToUnicode.__init__
    PDFDocument.register_font = register
    cos.ToUnicode.__init__ = __init__

"""The rinohtype speed and memory patches: what their caches are keyed on, what they release.

No PDF build except the last test (a three-paragraph book): every key that must differ is shown to differ.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_book.formats import rinoh_patches

REPO = Path(__file__).resolve().parents[2]

rinoh_patches.apply()


class _Doc:
    """What StyleSheet._get_value_lookup reads of a document: its matches, memoised as rinohtype does."""

    def __init__(self, sheet):
        self.stylesheet = sheet
        self._m = {}

    def get_matches(self, styled):
        from operator import attrgetter

        if id(styled) not in self._m:
            found = sorted(self.stylesheet.find_matches(styled, self), key=attrgetter("specificity"), reverse=True)
            for match in found:
                match.stylesheet = self.stylesheet.find_source(match.style_name)
            self._m[id(styled)] = (styled, found)
        return self._m[id(styled)][1]


def _sheet(name, font_size):
    from rinoh.paragraph import Paragraph
    from rinoh.style import StyledMatcher, StyleSheet

    matcher = StyledMatcher()
    matcher("outer", Paragraph.like("outer"))
    sheet = StyleSheet(name, matcher=matcher)
    sheet("outer", font_size=font_size)
    return sheet


def test_lookup_cache_memoises_the_parent_per_attribute_sheet_and_document():
    from rinoh.attribute import DefaultValueException
    from rinoh.dimension import PT
    from rinoh.paragraph import Paragraph
    from rinoh.text import SingleStyledText

    para = Paragraph("x", style="outer")
    words = [SingleStyledText(w, parent=para) for w in ("一", "二")]
    small, large = _sheet("small", 8 * PT), _sheet("large", 12 * PT)
    d_small, d_large = _Doc(small), _Doc(large)
    lookup = lambda sheet, styled, attr, doc: sheet._get_value_lookup(styled, attr, doc)  # noqa: E731
    assert lookup(small, words[0], "font_size", d_small) == 8 * PT  # from the parent's style
    cache = para.__dict__["_vllm_book_lookups"]
    assert cache["font_size"][0] is small and cache["font_size"][1] is d_small
    assert lookup(small, words[1], "font_size", d_small) == 8 * PT  # the sibling: from the memo
    # another style sheet (and document): not the memo of the first
    assert lookup(large, words[0], "font_size", d_large) == 12 * PT
    assert cache["font_size"][0] is large
    # another attribute: its own entry; "no style sets it" is memoised too and raised again
    with pytest.raises(DefaultValueException):
        lookup(large, words[0], "font_slant", d_large)
    assert cache["font_slant"][2] is rinoh_patches._DEFAULT
    with pytest.raises(DefaultValueException):
        lookup(large, words[1], "font_slant", d_large)
    assert "_vllm_book_lookups" not in words[0].__dict__  # only parents are memoised on
    # the style sheet's own answer for a style that does not set the attribute is memoised as a marker, and
    # get_value_for turns "nobody sets it" into the attribute's default without raising
    assert large.__dict__["_vllm_book_values"][("outer", "font_slant")] is rinoh_patches._DEFAULT
    assert large.get_value_for(words[0], "font_slant", d_large) == SingleStyledText.style_class._get_default(
        "font_slant")


def test_page_release_drops_placed_containers_and_later_use_fails():
    class C:
        def __init__(self, *children):
            self.children = list(children)
            self.canvas = b"content"
            self._placed_styleds = {}

    leaf = C()
    mid = C(leaf)
    page = C(mid)
    assert rinoh_patches.release_placed(page) == 2
    assert page.children == () and mid.children == () and "canvas" not in mid.__dict__
    assert page.canvas == b"content"  # the page's own canvas (the one written to the PDF) stays
    with pytest.raises(AttributeError):
        page.children.append(C())


def test_tall_diagram_is_drawn_at_most_a_page_high(tmp_path):
    from docutils import nodes

    from vllm_book.formats import mermaid_offline as mo

    def size(w, h):
        f = tmp_path / f"{w}x{h}.pdf"
        f.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Page /MediaBox [0 0 " + f"{w} {h}".encode() + b"] >>\n")
        img = nodes.image()
        mo._size_image(img, f, 2)
        return {k: img[k] for k in ("width", "height", "scale") if k in img}

    assert size(300, 400) == {"scale": mo.PDF_SCALE}  # as before: 80 %
    assert size(800, 400) == {"width": "100%"}  # as before: the text width
    assert size(300, 1400) == {"height": f"{mo.PDF_MAX_HEIGHT}pt"}  # 1,120 pt at 80 %: capped
    assert size(800, 1200) == {"height": f"{mo.PDF_MAX_HEIGHT}pt"}  # 622 pt at the text width: capped


@pytest.mark.skipif(not shutil.which("pdfinfo"), reason="poppler-utils missing")
def test_an_image_that_fits_on_no_page_stops_the_build_with_its_file_and_line(tmp_path):
    cairosvg = pytest.importorskip("cairosvg")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        (REPO / "tests" / "roots" / "test-formats" / "conf.py").read_text(encoding="utf-8")
        + f"\nvllm_book_src_root = {str(REPO / 'tests' / 'roots' / 'fake-vllm')!r}\n"
        + f"vllm_book_cache_dir = {str(REPO / '_build' / '.cache-tests')!r}\n", encoding="utf-8")
    cairosvg.svg2pdf(bytestring=b'<svg xmlns="http://www.w3.org/2000/svg" width="300" height="1400">'
                                b'<rect width="300" height="1400" fill="#cde"/></svg>', write_to=str(src / "tall.pdf"))
    (src / "index.md").write_text("# 测试\n\n一段文字。\n\n```{figure} tall.pdf\n:alt: 很高的图\n\n图的标题。\n```\n",
                                  encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "rinoh", "-q", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "ext"), "HOME": str(tmp_path)})
    assert proc.returncode != 0
    assert "pages in a row with nothing on them" in proc.stderr + proc.stdout
    assert "index.md:5" in proc.stderr + proc.stdout


def test_page_guard_state_signature_moves_with_any_progress():
    from rinoh.flowable import GroupedFlowablesState, StaticGroupedFlowables
    from rinoh.paragraph import Paragraph, ParagraphState

    para = Paragraph("一段文字")
    group = StaticGroupedFlowables([para])
    sig = lambda span, group_index=0, index=0: rinoh_patches.state_signature(  # noqa: E731
        GroupedFlowablesState(group, [para], ParagraphState(para, None, span, group_index), _index=index))
    assert sig(0) == sig(0)  # no progress: the same signature
    assert sig(0) != sig(1)  # a paragraph's next span
    assert sig(0) != sig(0, group_index=1)
    assert sig(0) != sig(0, index=1)  # the group's next flowable
    other = Paragraph("另一段")
    assert rinoh_patches.state_signature(ParagraphState(para, None)) != rinoh_patches.state_signature(
        ParagraphState(other, None))  # another flowable


def test_container_document_part_is_memoised_per_container():
    from rinoh.layout import Container

    class Part:
        document = object()

    class Top:
        children = []
        width = height = 100

        def __init__(self, part):
            self.document_part = part

    class Backend:
        class Canvas:
            pass

    Part.document = type("D", (), {"backend": Backend})()
    part_a, part_b = Part(), Part()
    a = Container("a", Top(part_a), width=10, height=10)
    b = Container("b", Top(part_b), width=10, height=10)
    assert a.document_part is part_a and b.document_part is part_b  # each its own part, not a shared memo
    assert a.__dict__["_vllm_book_part"] is part_a

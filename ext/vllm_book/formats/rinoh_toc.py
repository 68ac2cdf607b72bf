"""``toc-margin``: a table-of-contents title never runs into the page-number column.

rinohtype 0.5.6 sets a contents entry (``{title}\\t{page}``, the tab a right-aligned stop at the full width) by
filling the line with the title as it would any paragraph, then the tab.  A title that ends close to the right
edge leaves the tab less room than the page number needs: rinohtype warns "Tab space exceeded" and sets the
number straight after the last word ("…and parallelism11"), with no leader and off the right edge's alignment.
The English edition's long Latin titles hit it (three chapter entries and two in the version-drift appendix).

The patch does what LaTeX's contents do (``\\@tocrmarg``): while a ``TableOfContentsEntry`` is set, the text
before its right-aligned tab breaks :data:`PAGE_COLUMN_EM` em short of the right edge, on every line of the
entry, so the last word moves to the next line with the leader and the number, and a wrapped title's lines all
end left of the number column.  The tab stop itself stays at the full width, so the numbers stay aligned.
Entries that already fit are unchanged.
"""

from __future__ import annotations

from typing import Any

#: width kept free for the leader's end and the page number (four digits of the 10 pt contents ≈ 2.2 em)
PAGE_COLUMN_EM = 2.55

#: the reserved width (pt) of the contents entry being set, innermost last; empty outside one
_RESERVED: list[float] = []


def apply() -> None:
    from rinoh.paragraph import Line, ParagraphBase, SpaceException, TabAlign, TabException
    from rinoh.structure import TableOfContentsEntry

    render = ParagraphBase.render
    append_word = Line.append_word

    def render_entry(self: Any, container: Any, descender: Any, state: Any = None, **kwargs: Any) -> Any:
        if not isinstance(self, TableOfContentsEntry):
            return render(self, container, descender, state=state, **kwargs)
        _RESERVED.append(PAGE_COLUMN_EM * float(self.get_style("font_size", container)))
        try:
            return render(self, container, descender, state=state, **kwargs)
        finally:
            _RESERVED.pop()

    def append_before_tab(self: Any, word_or_inline: Any, force: bool = False) -> bool:
        if _RESERVED and self and not getattr(self, "_vllm_book_right_tab", False):
            try:
                word_or_inline[0]
            except TabException:
                if any(stop.align == TabAlign.RIGHT for stop in self.tab_stops):
                    self._vllm_book_right_tab = True
            except SpaceException:
                pass
            else:
                if self.cursor + word_or_inline.width > self.width - _RESERVED[-1]:
                    return False  # the word goes to the next line (the line breaker's own "does not fit")
        return append_word(self, word_or_inline, force)

    render_entry.__wrapped__ = render
    append_before_tab.__wrapped__ = append_word
    ParagraphBase.render = render_entry
    Line.append_word = append_before_tab

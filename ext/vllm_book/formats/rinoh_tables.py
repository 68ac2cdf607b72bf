"""``table-sizing``: rinohtype's column sizing, measuring cell contents only when the result depends on them.

``rinoh.table.Table._size_columns`` (0.5.6) first lays every cell out twice in a throw-away container — at
width 0 (the narrowest the cell can be: one word, or one Chinese character, per line) and at an infinite width
(its natural one-line width) — and only then decides which of the two it needs.  The width-0 layout is the
expensive one (a line per CJK character): 7.4 s of a 39 s rendering pass of the first six chapters under
cProfile (which inflates it; alternating runs without a profiler: 25 → 20 s, ``bench/README.md``).  This copy of the method computes the same widths with the same formulas, measuring
lazily:

* a table with a set width (``100%``: the wide tables :func:`.rinoh_builder.size_tables` gives relative column
  widths) and no auto-width column: the result is the relative widths scaled to the available width; neither
  measurement enters it (rinohtype's final ``_optimize_auto_columns`` call is a no-op without auto columns:
  every loop in it runs over the auto columns);
* otherwise the natural widths are measured first; the narrowest widths only when the table does not fit on one
  line per cell, or when the final widths leave a cell narrower than its natural width (the two places
  rinohtype reads them).

Every branch returns what rinohtype's own method returns; ``bench/compare_pdf.py`` checks the book's PDF.

``table-index``: a row's position in its table section (``TableRow._index``, ``RowIndex.__int__``) is found by
scanning the section from the top, and every cell asks for it — for its column (``ColumnIndex`` walks the rows
above for row spans) and for every style selector that tests a row or column index — so a table of *R* rows
costs *R*² scans.  The patch remembers each row's position and checks it in O(1) (``section[i] is row``)
before using it, so a moved row is found again; a row's spanned-column map is remembered with it.  The memo
lives in a table of this module keyed by the row's id, holding weak references (a dead row's entry goes with
it, so a process that builds several PDFs keeps no old document alive), not in the row's ``__dict__``:
rinohtype's ``Styled.__eq__`` compares ``__dict__``, and ``Table._render_section`` asks ``row == rows[-1]`` to
find the last row, which distinct rows with equal contents pass (228 times in the first six chapters); a memo
in ``__dict__`` made them unequal and changed the layout of two tables of the book.
"""

from __future__ import annotations

import weakref
from math import sqrt
from typing import Any


def apply_index() -> None:
    from rinoh.table import RowIndex, TableRow

    #: id(row) → [weak ref to the row, weak ref to its section, its index there, its spanned columns or None]
    memo: dict[int, list[Any]] = {}

    def entry(row: Any) -> list[Any]:
        section = row.parent
        hit = memo.get(id(row))
        if hit is not None and hit[0]() is row and hit[1]() is section and hit[2] < len(section) \
                and section[hit[2]] is row:
            return hit
        index = next(i for i, item in enumerate(section) if item is row)
        key = id(row)
        hit = memo[key] = [weakref.ref(row, lambda _, key=key: memo.pop(key, None)), weakref.ref(section), index,
                           None]
        return hit

    def _index(self: Any) -> int:
        return entry(self)[2]

    get_rowspanned_columns = TableRow.get_rowspanned_columns

    def rowspanned_columns(self: Any) -> dict[int, int]:
        hit = entry(self)
        if hit[3] is None:
            hit[3] = get_rowspanned_columns(self)
        return dict(hit[3])  # a copy: callers may change it

    original_index = TableRow._index
    TableRow._index = property(_index, doc=original_index.__doc__)
    rowspanned_columns.__wrapped__ = get_rowspanned_columns
    TableRow.get_rowspanned_columns = rowspanned_columns
    RowIndex.__int__ = lambda self: _index(self.row)


def apply() -> None:
    from rinoh.dimension import PERCENT
    from rinoh.dimension import DimensionBase as DimBase
    from rinoh.flowable import FlowableWidth
    from rinoh.table import Table
    from rinoh.util import INF

    original = Table._size_columns

    def _size_columns(self: Any, container: Any) -> list[float]:
        # rinoh.table.Table._size_columns, line for line, with min_widths/max_widths measured when read
        num_cols = (self.body or self.head).num_columns
        width = self._width(container)
        if width == FlowableWidth.FILL:
            width = 100 * PERCENT
        available_width = (float(container.width) if width == FlowableWidth.AUTO
                           else width.to_points(container.width))
        column_widths = (self.column_widths or self.get_style("column_widths", container)
                         or [None for _ in range(num_cols)])
        if len(column_widths) != num_cols:
            raise ValueError("'column_widths' length doesn't match the number of table columns")
        fixed_cols = [i for i, w in enumerate(column_widths) if isinstance(w, DimBase)]
        rel_cols = [i for i, w in enumerate(column_widths) if w and i not in fixed_cols]
        auto_cols = [i for i, w in enumerate(column_widths) if w is None]
        final = [w.to_points(container.width) if i in fixed_cols else None for i, w in enumerate(column_widths)]
        fixed_total_width = sum(w or 0 for w in final)
        if fixed_total_width > available_width:
            self.warn("Total width of fixed-width columns exceeds the available width")

        measured: dict[float, list[float]] = {}

        def widths(limit: float) -> list[float]:
            if limit not in measured:
                measured[limit] = self._widths_from_content(final, limit, container)
            return measured[limit]

        if not auto_cols and width != FlowableWidth.AUTO:
            rel_widths = None  # not read: no auto column to convert
        else:
            max_widths = widths(INF)
            rel_max_widths = [max(max(column_widths[i] / column_widths[j] * max_widths[j]
                                      for j in rel_cols if j != i), max_widths[i]) if i in rel_cols else w
                              for i, w in enumerate(max_widths)]
            if sum(rel_max_widths) < available_width:
                if width == FlowableWidth.AUTO:
                    return rel_max_widths
                rel_widths = rel_max_widths
            else:
                rel_widths = [sqrt(mini * maxi) for mini, maxi in zip(widths(0), max_widths)]
        if auto_cols:
            auto_rel_factor = min(rel_widths[i] / column_widths[i] for i in rel_cols) if rel_cols else 1
            for i in auto_cols:
                column_widths[i] = rel_widths[i] * auto_rel_factor
            rel_cols = sorted(rel_cols + auto_cols)
        if rel_cols:
            rel_sum = sum(column_widths[i] for i in rel_cols)
            rel_factor = (available_width - fixed_total_width) / rel_sum
            for i in rel_cols:
                final[i] = column_widths[i] * rel_factor
        if auto_cols and not all(fin >= maxw for fin, maxw in zip(final, widths(INF))):
            final = self._optimize_auto_columns(auto_cols, final, widths(0), widths(INF), container)
        return final

    _size_columns.__wrapped__ = original
    Table._size_columns = _size_columns

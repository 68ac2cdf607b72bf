"""One problem found by a check, as both ``make validate`` and the build report it (no Sphinx imports).

Every check of the book (the tree, front matter, excerpts, diagrams, …) returns
:class:`Problem` objects; ``validate`` prints them as ``file:line: message`` plus
a ``fix:`` line, the build logs them as warnings (or errors, for the tree) at
the same ``file:line``.  That is how the two gates cannot disagree: there is
one implementation per check, and two printers.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, order=True)
class Problem:
    """One error: where, what, and what to do about it."""

    file: str  # repository-relative when possible
    line: int
    message: str
    fix: str = ""
    check: str = ""  # pin | tree | anchors | unmanaged | curriculum | reviews | links | front-matter | diagrams | index

    def format(self) -> str:
        head = f"{self.file}:{self.line}: {self.message}"
        return head + (f"\n    fix: {self.fix}" if self.fix else "")

    def text(self) -> str:
        """The message and its fix, without the location (the build's logger adds that)."""
        return self.message + (f"\n    fix: {self.fix}" if self.fix else "")

"""What a ``src-code`` excerpt shows, and why it cannot (no Sphinx imports).

The directive's options (``:focus:``, ``:emphasize:``, ``:max-lines:``) are
applied here, once: :class:`~.transforms.ResolveAnchors` renders the result,
``make validate`` reports the same problems without a build.  A problem names
the option, so both gates can point at the option's own line.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .resolve import Resolution, match_lines

if TYPE_CHECKING:
    from ..index import SourceIndex


@dataclasses.dataclass
class Excerpt:
    start: int  # first shown line (of the file)
    end: int  # last shown line
    full_end: int  # last line of the target (beyond ``end`` when cut by :max-lines:)
    shown: list[str]
    hl: list[int]  # 1-based positions within ``shown`` to emphasise

    @property
    def truncated(self) -> bool:
        return self.full_end > self.end


@dataclasses.dataclass(frozen=True)
class OptionProblem:
    option: str  # "focus" | "emphasize" | "" (the target itself)
    message: str
    fatal: bool  # no excerpt can be shown


def split_emphasize(value: str | None) -> list[str]:
    """``:emphasize: a; b`` → ``["a", "b"]``."""
    return [t.strip() for t in (value or "").split(";") if t.strip()]


def make_excerpt(index: SourceIndex, res: Resolution, *, target: str, focus: str | None = None,
                 emphasize: list[str] | tuple[str, ...] = (), max_lines: int | None = None,
                 ) -> tuple[Excerpt | None, list[OptionProblem]]:
    """The excerpt of resolved *res*, and every problem of its options."""
    if res.kind == "dir":
        return None, [OptionProblem("", "src-code needs a file, symbol or line, not a directory", True)]
    lines = index.lines(res.path)
    start, end = res.start, min(res.end, len(lines))
    if focus:
        hits = match_lines(lines, start, end, focus)
        if len(hits) != 1:
            where = f"{res.path}:{start}-{end}"
            msg = (f'no line of {where} contains "{focus}"' if not hits else
                   f'"{focus}" matches {len(hits)} lines of {where} (lines {", ".join(map(str, hits[:12]))}); '
                   "quote a longer, unique text")
            return None, [OptionProblem("focus", f"src-code {target!r}: :focus: {msg}", True)]
        start = hits[0]
    full_end = end
    if max_lines and end - start + 1 > max_lines:
        end = start + max_lines - 1
    shown = lines[start - 1: end]
    hl: list[int] = []
    problems = []
    for text in emphasize:
        hits = [i + 1 for i, line in enumerate(shown) if text in line]
        if not hits:
            problems.append(OptionProblem("emphasize", f'src-code {target!r}: :emphasize: "{text}" matches no shown line '
                                                       f"({res.path}:{start}-{end})", False))
        hl.extend(hits)
    return Excerpt(start, end, full_end, shown, sorted(set(hl))), problems


FIX = {
    "focus": "quote the text of exactly one line of the target (copy it from the source browser)",
    "emphasize": "quote text of a shown line (mind :max-lines: and :focus:), or drop it from :emphasize:",
    "": "cite a file, a symbol or a line (see docs/anchors.md)",
}

"""The chapter template (小结 / 自检 / 下一步), checked once for the build and ``make validate`` (no Sphinx imports).

The build (:func:`vllm_book.chapters.check_template`) reads the H2 sections
from the doctree, validate from its Markdown scanner; both hand them to
:func:`check` as ``(title, line, dropdowns)`` and report what it returns at the
chapter file's line.
"""

from __future__ import annotations

from collections.abc import Sequence

SELF_CHECK_MIN, SELF_CHECK_MAX = 3, 5


def check(h2: Sequence[tuple[str, int, int]], required: Sequence[str], aliases: dict[str, int] | None = None,
          end_line: int = 1) -> list[tuple[int, str, str]]:
    """Problems ``(line, message, fix)`` of a chapter whose H2 sections are *h2* ``(title, line, dropdown count)``.

    *aliases* maps a heading to the index of the required section it stands for
    (an edition's translation); *end_line* is the chapter's last line, where a
    missing section belongs.
    """
    aliases = dict(aliases or {}) or {name: i for i, name in enumerate(required)}
    canon = [aliases.get(title) for title, _line, _n in h2]
    template = " / ".join(f"## {r}" for r in required)
    out = []
    missing = [name for i, name in enumerate(required) if i not in canon]
    for name in missing:
        out.append((end_line, f"chapter lacks the section '## {name}' (the template ends with {template})",
                    f"add '## {name}' at the end, in the order {template} (see docs/authoring.md)"))
    if not missing and canon[-len(required):] != list(range(len(required))):
        out.append((end_line, f"sections {template} must close the chapter, in that order",
                    f"move them to the end of the chapter, in the order {template}"))
    self_check = 1 if len(required) > 1 else 0
    for (title, line, n), c in zip(h2, canon):
        if c == self_check and not SELF_CHECK_MIN <= n <= SELF_CHECK_MAX:
            out.append((line, f"'## {title}' should hold {SELF_CHECK_MIN}–{SELF_CHECK_MAX} questions with folded answers "
                              f"(:::{{dropdown}}), found {n}",
                        "write each question as a :::{dropdown} 问题 block with the answer inside"))
    return out


def check_diagrams(count: int, line: int = 1) -> list[tuple[int, str, str]]:
    """A chapter draws at least one Mermaid diagram (the template's body: anchors, a diagram, a worked example)."""
    if count:
        return []
    return [(line, "chapter has no Mermaid diagram (the template asks for at least one: the main flow, a timeline "
                   "or a state machine)",
             "draw the chapter's main flow or what unfolds over steps as a ```{mermaid} block (see docs/authoring.md)")]

"""Chapter front matter: parsed and checked once, for ``make validate`` and the build (no Sphinx imports).

The header card (:mod:`vllm_book.chapters`) and validate's Markdown scanner
(:mod:`vllm_book.sync.mdscan`) both call :func:`parse`; both report
:func:`check_chapter`'s problems.  Every problem carries the line of the
chapter file (not of the YAML block), and says what is wrong in a writer's
words::

    ---
    audience: 谁该读这一篇（一句话）
    prerequisites: [01-overview/01-what-is-vllm]   # docnames (a list, even of one)
    difficulty: 入门            # 入门 / 进阶 / 高级
    outcomes:                   # 学完能，3–5 条
      - …
    ---
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import yaml

DIFFICULTIES = ("入门", "进阶", "高级")
REQUIRED_KEYS = ("audience", "prerequisites", "difficulty", "outcomes")
AUTHORING = "see docs/authoring.md"

#: what PyYAML's messages mean for someone writing ``key: value`` lines
_YAML_WORDS = (
    (r"mapping values are not allowed", "a second ':' in this line (a value that holds ': ' must be quoted)",
     'put the value in double quotes: key: "text: more text"'),
    (r"could not find expected ':'", "this line is not a 'key: value' line",
     "write it as key: value, or indent it under the key it belongs to"),
    (r"found character '\\t'", "a tab character (YAML indents with spaces only)", "replace the tab with spaces"),
    (r"expected ',' or '\]'", "a list in [ ] is not closed, or an item holds an unquoted ',' or ':'",
     "close the list with ] and quote items that contain , or :"),
    (r"expected <block end>", "the indentation of this line does not match the lines above",
     "indent list items (- …) the same amount, under their key"),
    (r"found undefined alias|found unhashable key|did not find expected key",
     "this line does not fit the 'key: value' structure above it", "check the indentation and the quotes"),
    (r"found unexpected end of stream|found unknown escape|while scanning a quoted scalar",
     "a quoted value is not closed (or holds an unknown \\ escape)", "close the quotes (or use single quotes)"),
)


@dataclasses.dataclass
class FrontMatter:
    data: dict
    start: int = 0  # line of the opening ---, 0 when there is no front matter
    end: int = 0  # line of the closing ---
    key_lines: dict[str, int] = dataclasses.field(default_factory=dict)
    item_lines: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # list values: line per item
    problems: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)  # (line, message, fix)

    def line(self, key: str) -> int:
        return self.key_lines.get(key, self.start or 1)


def _words(exc: yaml.YAMLError) -> tuple[str, str]:
    text = str(exc)
    for pattern, words, fix in _YAML_WORDS:
        if re.search(pattern, text):
            return words, fix
    problem = getattr(exc, "problem", None) or text.split("\n", 1)[0]
    return f"YAML cannot read this line ({problem})", "check the quotes and the indentation (see docs/authoring.md)"


def parse(text: str) -> FrontMatter:
    """The front matter at the top of a Markdown text (``FrontMatter({})`` when it has none)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return FrontMatter({})
    end = next((j for j in range(1, len(lines)) if lines[j].strip() == "---"), None)
    if end is None:
        return FrontMatter({}, 1, 1, problems=[(1, "the front matter opened here is never closed", "end it with a line ---")])
    fm = FrontMatter({}, 1, end + 1)
    block = "\n".join(lines[1:end])
    offset = 2  # line 1 of the YAML block is line 2 of the file
    try:
        node = yaml.compose(block)
        data = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + offset if mark is not None else 1
        words, fix = _words(exc)
        fm.problems.append((line, f"front matter line {line}: {words}", fix))
        return fm
    if data is None:
        return fm
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        fm.problems.append((offset, "the front matter must be 'key: value' lines", f"write it as key: value lines ({AUTHORING})"))
        return fm
    fm.data = data
    for knode, vnode in node.value:
        key = str(knode.value)
        fm.key_lines[key] = knode.start_mark.line + offset
        if isinstance(vnode, yaml.SequenceNode):
            fm.item_lines[key] = [v.start_mark.line + offset for v in vnode.value]
    return fm


def check_chapter(fm: FrontMatter, exists: Callable[[str], bool] | None = None) -> list[tuple[int, str, str]]:
    """Problems of a chapter's front matter ``(line, message, fix)``; *exists* (docname → bool) checks prerequisites."""
    out = list(fm.problems)
    if fm.problems:
        return out
    data = fm.data
    if not fm.start:
        return [(1, "the chapter has no front matter (audience, prerequisites, difficulty, outcomes)",
                 f"start the file with the --- block of the chapter template ({AUTHORING})")]
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        out.append((fm.start, f"the front matter lacks {', '.join(missing)}", f"add {', '.join(missing)} ({AUTHORING})"))
    prereq = data.get("prerequisites")
    if prereq is not None and not isinstance(prereq, list):
        shown = str(prereq)
        out.append((fm.line("prerequisites"),
                    f"prerequisites must be a list of docnames, not the text {shown!r}",
                    f"write it as a list, even of one: prerequisites: [{shown}] (or [] for none)"))
        prereq = [prereq] if isinstance(prereq, str) else []
    for i, target in enumerate(prereq or []):
        line = (fm.item_lines.get("prerequisites") or [])[i:i + 1] or [fm.line("prerequisites")]
        if not isinstance(target, str):
            out.append((line[0], f"prerequisite {target!r} is not a docname", "write the docname, e.g. 01-overview/00-prerequisites"))
        elif exists is not None and not exists(target.strip().lstrip("/")):
            out.append((line[0], f"prerequisite {target!r} is not a page or a chapter of the book",
                        "use the docname of an existing chapter (e.g. 01-overview/00-prerequisites)"))
    difficulty = data.get("difficulty")
    if difficulty is not None and str(difficulty) not in DIFFICULTIES:
        out.append((fm.line("difficulty"), f"difficulty {str(difficulty)!r} is not one of {' / '.join(DIFFICULTIES)}",
                    f"use one of {', '.join(DIFFICULTIES)}"))
    outcomes = data.get("outcomes")
    if outcomes is not None and not isinstance(outcomes, list):
        out.append((fm.line("outcomes"), "outcomes must be a list (- … lines)", "write each outcome on a line of its own: - …"))
    elif outcomes and not 3 <= len(outcomes) <= 5:
        out.append((fm.line("outcomes"), f"outcomes should list 3–5 items, found {len(outcomes)}", "keep 3 to 5 outcomes"))
    audience = data.get("audience")
    if audience is not None and not isinstance(audience, str):
        out.append((fm.line("audience"), "audience must be one sentence of text", "write it as audience: 谁该读这一篇"))
    return out

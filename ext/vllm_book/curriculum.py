"""``curriculum.toml``: the book's chapters, in reading order (no Sphinx imports).

The toctree, the part pages, the learning paths (``tracks``) and the PDF/EPUB
order all come from here.  ``check()`` compares it with the files on disk and
returns problems as ``(file, line, message)``; ``make validate`` and the
Sphinx build both use it.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

LEVELS = ("入门", "进阶", "高级")
TRACKS = ("quickstart", "internals", "production", "interview")
ENVIRONMENTS = ("no-gpu", "cpu", "nvidia-gpu", "multi-gpu")
STATUSES = ("planned", "written")
#: what a chapter is for, which sets its readability limits (vllm_book.sync.readability)
KINDS = ("concept", "walkthrough")
#: what docs/chapter-template.md leaves for the author (make new-chapter); a written chapter holding it is refused
PLACEHOLDER = "TODO（作者）"
CHAPTER_FILE = re.compile(r"^\d{2}-[a-z-]+/\d{2}[a-z]?-[a-z0-9-]+\.md$")


@dataclasses.dataclass(frozen=True)
class Chapter:
    path: str  # docname, e.g. "01-overview/00-prerequisites"
    title: str
    level: str
    tracks: tuple[str, ...]
    environments: tuple[str, ...]
    source_areas: tuple[str, ...]
    status: str
    part: str
    line: int  # line of the record in curriculum.toml
    hook: str = ""  # one line: why read it (home page, part pages)
    kind: str = ""  # concept | walkthrough: the chapter's own kind, else its part's


    @property
    def written(self) -> bool:
        return self.status == "written"


@dataclasses.dataclass(frozen=True)
class Part:
    dir: str
    title: str
    title_en: str
    chapters: tuple[Chapter, ...]
    number: int
    kind: str = ""  # concept | walkthrough: the default kind of its chapters ("" = concept)
    line: int = 0  # line of the [[part]] record


@dataclasses.dataclass
class Curriculum:
    path: Path
    parts: list[Part]

    def chapters(self) -> list[Chapter]:
        return [c for p in self.parts for c in p.chapters]

    def chapter(self, docname: str) -> Chapter | None:
        return next((c for c in self.chapters() if c.path == docname), None)

    def kind(self, ch: Chapter) -> str:
        """The chapter's kind: its own ``kind``, else its part's, else ``concept`` (the stricter limits)."""
        if ch.kind:
            return ch.kind
        return next((p.kind for p in self.parts if p.dir == ch.part and p.kind), "concept")

    def track(self, name: str) -> list[Chapter]:
        return [c for c in self.chapters() if name in c.tracks]


class CurriculumError(ValueError):
    pass


def record_lines(text: str, header: str = "[[part.chapter]]") -> list[int]:
    """The 1-based line of every ``header`` table of a TOML text (tomllib gives no line numbers)."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if line.strip() == header]


def load(path: Path) -> Curriculum:
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CurriculumError(f"{path}: {exc}") from None
    lines = iter(record_lines(text))
    part_lines = iter(record_lines(text, "[[part]]"))
    parts = []
    for n, p in enumerate(data.get("part", []), start=1):
        chapters = []
        for c in p.get("chapter", []):
            line = next(lines, 0)
            try:
                chapters.append(Chapter(
                    path=c["path"], title=c["title"], level=c["level"], tracks=tuple(c.get("tracks", ())),
                    environments=tuple(c.get("environments", ())), source_areas=tuple(c.get("source_areas", ())),
                    status=c.get("status", "planned"), part=p["dir"], line=line, hook=c.get("hook", ""),
                    kind=c.get("kind", "")))
            except KeyError as exc:
                raise CurriculumError(f"{path}:{line}: chapter record lacks {exc}") from None
        parts.append(Part(p["dir"], p["title"], p.get("title_en", ""), tuple(chapters), n, kind=p.get("kind", ""),
                          line=next(part_lines, 0)))
    return Curriculum(path, parts)


def check(cur: Curriculum, source_dir: Path) -> list[tuple[str, int, str]]:
    """Curriculum ↔ disk problems, each ``(file, line, message with a fix)``."""
    problems: list[tuple[str, int, str]] = []
    f = str(cur.path)
    seen: set[str] = set()
    for part in cur.parts:
        if part.kind and part.kind not in KINDS:
            problems.append((f, part.line, f"part {part.dir}: kind {part.kind!r} is not one of {', '.join(KINDS)}; "
                                           f"use \"concept\" or \"walkthrough\" (it sets the readability limits)"))
    for ch in cur.chapters():
        where = (f, ch.line)
        if ch.path in seen:
            problems.append((*where, f"chapter {ch.path} is listed twice; remove one record"))
        seen.add(ch.path)
        if not ch.path.startswith(ch.part + "/"):
            problems.append((*where, f"{ch.path} is listed under part {ch.part}; move the record to its part"))
        for field, value, allowed in (("level", (ch.level,), LEVELS), ("tracks", ch.tracks, TRACKS),
                                      ("environments", ch.environments, ENVIRONMENTS), ("status", (ch.status,), STATUSES)):
            for v in value:
                if v not in allowed:
                    problems.append((*where, f"{ch.path}: {field} {v!r} is not one of {', '.join(allowed)}"))
        if ch.kind and ch.kind not in KINDS:
            problems.append((*where, f"{ch.path}: kind {ch.kind!r} is not one of {', '.join(KINDS)}"))
        if not isinstance(ch.hook, str) or not ch.hook.strip():
            problems.append((*where, f"{ch.path} has no hook; add hook = \"…\" (one line in our words: why a reader "
                                     f"should read it; the home page and the part page show it)"))
        elif len(ch.hook) > 60:
            problems.append((*where, f"{ch.path}: hook is {len(ch.hook)} characters; keep it to one line of at most 60"))
        exists = (source_dir / f"{ch.path}.md").is_file()
        if ch.written and not exists:
            problems.append((*where, f"{ch.path} has status = \"written\" but source/{ch.path}.md does not exist; "
                                     f"write it or set status = \"planned\""))
        if ch.written and exists:
            text = (source_dir / f"{ch.path}.md").read_text(encoding="utf-8")
            for n, line in enumerate(text.splitlines(), start=1):
                if PLACEHOLDER in line:
                    problems.append((str(source_dir / f"{ch.path}.md"), n,
                                     f"{ch.path} still holds the template placeholder {PLACEHOLDER}; write that "
                                     f"part of the chapter (or set its status back to \"planned\")"))
        if not ch.written and exists:
            problems.append((*where, f"source/{ch.path}.md exists but its record says status = \"planned\"; "
                                     f"set status = \"written\""))
    for md in sorted(source_dir.glob("*/*.md")):
        rel = md.relative_to(source_dir).as_posix()
        if CHAPTER_FILE.match(rel) and rel[:-3] not in seen:
            problems.append((str(md), 1, f"chapter file {rel} is not listed in {cur.path.name}; add a [[part.chapter]] record"))
    return problems


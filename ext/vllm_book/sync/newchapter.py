"""``make new-chapter CHAPTER=<docname>``: start a chapter from ``docs/chapter-template.md``.

Writes ``source/<docname>.md`` from the template (title and label filled in, every place the author must
write marked ``TODO（作者）``), sets the chapter's curriculum record to ``status = "written"`` (adding the
record at the end of its part when the curriculum does not list it yet), and gives it a pending record in
``content-review.toml``.  The build and ``validate`` then refuse the chapter until no ``TODO（作者）`` is left.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import curriculum as cur_mod
from . import review
from .common import REVIEW_FILE

TEMPLATE = "docs/chapter-template.md"
PLACEHOLDER = cur_mod.PLACEHOLDER


class NewChapterError(ValueError):
    pass


def _label(docname: str) -> str:
    part, name = docname.split("/", 1)
    return re.sub(r"^\d{2}-", "", part) + "-" + re.sub(r"^\d{2}[a-z]?-", "", name)


def _record(docname: str, title: str, level: str, hook: str) -> str:
    return (f'\n[[part.chapter]]\npath = "{docname}"\ntitle = "{title}"\nhook = "{hook}"\nlevel = "{level}"\n'
            f'tracks = []\nenvironments = ["no-gpu"]\nsource_areas = []\nstatus = "written"\n')


def create(root: Path, docname: str, *, title: str = "", level: str = "进阶", hook: str = "") -> list[str]:
    """Create the chapter; returns what was done, one line each.  Raises NewChapterError with the fix."""
    if not cur_mod.CHAPTER_FILE.match(docname + ".md"):
        raise NewChapterError(f"{docname!r} is not a chapter docname like 05-distributed/06-topic "
                              f"(part directory / two digits, a dash, lower-case words)")
    if level not in cur_mod.LEVELS:
        raise NewChapterError(f"level {level!r} is not one of {', '.join(cur_mod.LEVELS)}")
    cur_path = root / "curriculum.toml"
    cur = cur_mod.load(cur_path)
    part_dir = docname.split("/", 1)[0]
    part = next((p for p in cur.parts if p.dir == part_dir), None)
    if part is None:
        raise NewChapterError(f"part {part_dir!r} is not in curriculum.toml; known: {', '.join(p.dir for p in cur.parts)}")
    target = root / "source" / f"{docname}.md"
    if target.exists():
        raise NewChapterError(f"source/{docname}.md exists already; edit it instead")
    done = []
    text = cur_path.read_text(encoding="utf-8")
    chapter = cur.chapter(docname)
    if chapter is not None:
        title = title or chapter.title
        lines = text.splitlines(keepends=True)
        start = chapter.line  # the record's [[part.chapter]] line (1-based)
        for i in range(start, len(lines)):
            if lines[i].startswith("[["):
                break
            if re.match(r'status\s*=\s*"planned"', lines[i]):
                lines[i] = 'status = "written"\n'
                done.append(f"curriculum.toml:{i + 1}: {docname} is now status = \"written\"")
                break
        text = "".join(lines)
    else:
        if not title or not hook:
            raise NewChapterError(f"{docname} is not in curriculum.toml yet: give TITLE=\"…\" and HOOK=\"…\" "
                                  f"(one line: why read it)")
        last = part.chapters[-1].line if part.chapters else None
        lines = text.splitlines(keepends=True)
        # after the part's last record (or the [[part]] header): before the next [[ that is not inside it
        anchor = (last or next(i + 1 for i, ln in enumerate(lines) if ln.strip() == f'dir = "{part_dir}"'))
        end = next((i for i in range(anchor, len(lines)) if lines[i].startswith("[[")), len(lines))
        lines.insert(end, _record(docname, title, level, hook).lstrip("\n") + ("\n" if end < len(lines) else ""))
        text = "".join(lines)
        done.append(f"curriculum.toml: added {docname} at the end of part {part_dir}")
    cur_path.write_text(text, encoding="utf-8")
    template = (root / TEMPLATE).read_text(encoding="utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(template.format(label=_label(docname), title=title), encoding="utf-8")
    done.append(f"source/{docname}.md: from {TEMPLATE} (fill in every {PLACEHOLDER})")
    rpath = root / REVIEW_FILE
    reviews, _ = review.load(rpath) if rpath.exists() else (None, [])
    records_out, added, _orphans = review.sync_with(reviews, cur_mod.load(cur_path).chapters(), rpath)
    review.write(rpath, records_out)
    if added:
        done.append(f"{REVIEW_FILE}: pending record for {docname}")
    return done

"""make new-chapter on a copy of the book's own files: the template becomes a chapter, the curriculum and the
review records follow, and the one curriculum check refuses it until every TODO（作者） is written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from vllm_book import curriculum
from vllm_book.sync import newchapter

REPO = Path(__file__).resolve().parents[2]


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "book"
    (root / "docs").mkdir(parents=True)
    for name in ("curriculum.toml", "content-review.toml", "vllm-pin.toml"):
        shutil.copy(REPO / name, root / name)
    shutil.copy(REPO / "docs" / "chapter-template.md", root / "docs" / "chapter-template.md")
    shutil.copytree(REPO / "source", root / "source")
    return root


def _plan_again(root: Path, ch) -> object:
    """Set *ch* back to planned in the copied checkout (its record's status line, its file removed)."""
    cur_file = root / "curriculum.toml"
    text = cur_file.read_text(encoding="utf-8")
    i = text.index(f'path = "{ch.path}"')
    j = text.index('status = "written"', i)
    cur_file.write_text(text[:j] + 'status = "planned"' + text[j + len('status = "written"'):], encoding="utf-8")
    (root / "source" / f"{ch.path}.md").unlink()
    return curriculum.load(cur_file).chapter(ch.path)


def test_a_planned_chapter_starts_from_the_template(tmp_path):
    root = _copy(tmp_path)
    planned = next((c for c in curriculum.load(root / "curriculum.toml").chapters() if not c.written), None)
    if planned is None:  # every chapter of the book is written: plan the last one again in the copy
        planned = _plan_again(root, curriculum.load(root / "curriculum.toml").chapters()[-1])
    # run as a reader does: from inside the checkout, with no --root (the working directory decides)
    proc = subprocess.run([sys.executable, "-m", "vllm_book.sync", "new-chapter", planned.path], cwd=root,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (root / "source" / f"{planned.path}.md").read_text(encoding="utf-8")
    assert f"# {planned.title}\n" in text and "## 小结" in text and "{{vllm_version}}" in text
    cur = curriculum.load(root / "curriculum.toml")
    assert cur.chapter(planned.path).written
    assert f'path = "{planned.path}"' in (root / "content-review.toml").read_text(encoding="utf-8")
    problems = curriculum.check(cur, root / "source")
    todo = [p for p in problems if newchapter.PLACEHOLDER in p[2]]
    assert todo and all(p[0].endswith(f"{planned.path}.md") and p[1] > 0 for p in todo)
    assert [p for p in problems if p not in todo] == []
    # it did not touch the real checkout
    real = curriculum.load(REPO / "curriculum.toml").chapter(planned.path)
    assert not (REPO / "source" / f"{planned.path}.md").exists() or real.written


def test_a_new_docname_needs_a_title_and_a_hook(tmp_path):
    root = _copy(tmp_path)
    try:
        newchapter.create(root, "05-distributed/09-brand-new")
    except newchapter.NewChapterError as exc:
        assert 'give TITLE="…" and HOOK="…"' in str(exc)
    else:
        raise AssertionError("no error")
    done = newchapter.create(root, "05-distributed/09-brand-new", title="全新一章", hook="测试用的一句话")
    assert any("added 05-distributed/09-brand-new" in d for d in done)
    cur = curriculum.load(root / "curriculum.toml")
    part = next(p for p in cur.parts if p.dir == "05-distributed")
    assert part.chapters[-1].path == "05-distributed/09-brand-new" and part.chapters[-1].hook == "测试用的一句话"


def test_bad_docnames_are_refused_with_the_expected_shape(tmp_path):
    root = _copy(tmp_path)
    for bad, words in (("05-distributed/Topic", "is not a chapter docname"), ("99-nope/01-x", "part '99-nope'")):
        try:
            newchapter.create(root, bad, title="t", hook="h")
        except newchapter.NewChapterError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(bad)

"""curriculum.toml ↔ disk checks (pure, no Sphinx)."""

from __future__ import annotations

from pathlib import Path

from vllm_book import curriculum

REPO = Path(__file__).resolve().parents[2]

RECORD = """
[[part.chapter]]
path = "{path}"
title = "{title}"
hook = "{hook}"
level = "{level}"
tracks = ["internals"]
environments = ["no-gpu"]
source_areas = []
status = "{status}"
"""


def make(tmp_path: Path, records: list[dict[str, str]], files: list[str]) -> list[tuple[str, int, str]]:
    text = '[[part]]\ndir = "01-a"\ntitle = "A"\n' + "".join(
        RECORD.format(**{"level": "入门", "title": "T", "status": "written", "hook": "为什么读它", **r}) for r in records)
    (tmp_path / "curriculum.toml").write_text(text)
    src = tmp_path / "source"
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_text("# T\n")
    src.mkdir(exist_ok=True)
    return curriculum.check(curriculum.load(tmp_path / "curriculum.toml"), src)


def test_clean(tmp_path):
    assert make(tmp_path, [{"path": "01-a/01-x"}], ["01-a/01-x.md"]) == []


def test_listed_but_missing_names_the_record_line(tmp_path):
    (problem,) = make(tmp_path, [{"path": "01-a/01-x"}], [])
    file, line, msg = problem
    assert file.endswith("curriculum.toml") and line == 5
    assert 'status = "written" but source/01-a/01-x.md does not exist' in msg


def test_on_disk_but_unlisted(tmp_path):
    (problem,) = make(tmp_path, [], ["01-a/02-y.md"])
    assert problem[0].endswith("01-a/02-y.md") and "is not listed in curriculum.toml" in problem[2]


def test_planned_but_present_and_bad_values(tmp_path):
    problems = make(tmp_path, [{"path": "01-a/01-x", "status": "planned", "level": "超难"}], ["01-a/01-x.md"])
    messages = " | ".join(p[2] for p in problems)
    assert 'set status = "written"' in messages
    assert "level '超难' is not one of 入门, 进阶, 高级" in messages


def test_the_real_curriculum_has_61_chapters_in_9_parts():
    cur = curriculum.load(REPO / "curriculum.toml")
    assert len(cur.parts) == 9 and len(cur.chapters()) == 61
    assert curriculum.check(cur, REPO / "source") == []


def test_every_chapter_needs_a_one_line_hook(tmp_path):
    (problem,) = make(tmp_path, [{"path": "01-a/01-x", "hook": ""}], ["01-a/01-x.md"])
    assert problem[1] == 5 and "01-a/01-x has no hook; add hook = " in problem[2]
    (problem,) = make(tmp_path, [{"path": "01-a/01-x", "hook": "长" * 61}], ["01-a/01-x.md"])
    assert "hook is 61 characters" in problem[2]

"""Drift at a glance: the card text and the per-chapter data come from an impact report, nothing typed by hand."""

from __future__ import annotations

import json
from pathlib import Path

from vllm_book.sync import drift

REPO = Path(__file__).resolve().parents[2]


def _report(tmp_path: Path) -> Path:
    data = {"to": {"version": "9.9.0"}, "cited": [
        {"subject": "vllm/a.py::f", "status": "changed", "uses": ["source/01-x/01-a.md:10", "source/01-x/01-a.md:12"]},
        {"subject": "vllm/a.py::g", "status": "moved", "uses": ["source/01-x/01-a.md:20", "source/01-x/02-b.md:3"]},
        {"subject": "vllm/b.py::h", "status": "unchanged", "uses": ["source/01-x/02-b.md:5"]},
        {"subject": "vllm/b.py::gone", "status": "removed", "uses": ["source/01-x/01-a.md:30"]}]}
    path = tmp_path / "impact-0.26.0-to-9.9.0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_per_chapter_entries_and_card_text(tmp_path):
    d = drift.load(_report(tmp_path))
    assert d["to"] == "9.9.0"
    a = d["docs"]["01-x/01-a"]
    assert [(s, st) for s, st, _ in a] == [("vllm/a.py::f", "changed"), ("vllm/a.py::g", "moved"),
                                           ("vllm/b.py::gone", "removed")]
    assert a[0][2] == [10, 12]
    assert drift.card_text(a, "9.9.0", "zh") == "本章引用的 3 处源码在 vLLM v9.9.0 中：1 处改动、1 处移动、1 处消失"
    assert drift.card_text([("x", "unchanged", [1])], "9.9.0", "en") == "all 1 cited places unchanged in vLLM v9.9.0"
    assert "尚未收录" in drift.card_text(None, "9.9.0", "zh")


def test_the_newest_report_is_the_highest_version():
    names = ["impact-0.26.0-to-0.9.0.json", "impact-0.26.0-to-0.33.0.json", "impact-0.26.0-to-0.10.1.json"]
    assert max(names, key=lambda n: drift._version_key(Path(n))) == "impact-0.26.0-to-0.33.0.json"


def test_the_real_book_cards_say_what_the_committed_report_says(real_book: Path):
    page = (real_book / "01-overview" / "00-prerequisites.html").read_text(encoding="utf-8")
    report = max((REPO / "docs").glob("impact-*-to-*.json"), key=drift._version_key)
    entries = drift.load(report)["docs"]["01-overview/00-prerequisites"]
    assert drift.card_text(entries, drift.load(report)["to"], "zh") in page
    assert 'href="../guide/drift.html#drift-01-overview-00-prerequisites"' in page
    assert (real_book / "guide" / "drift.html").is_file()


def test_report_figures_are_computed_from_the_report():
    from vllm_book.sync.drift import report_figures

    data = {"from": {"version": "0.26.0"}, "to": {"version": "0.33.0"},
            "counts": {"unchanged": 1, "changed": 1, "moved": 0, "removed": 0},
            "cited": [{"anchors": [{"resolves": True}, {"resolves": False}], "uses": ["source/a/b.md:3"]},
                      {"anchors": [{"resolves": False}], "uses": ["source/a/b.md:9", "source/c/d.md:1"]}],
            "pages": {"a/b": {"reasons": ["x"]}, "c/d": {"reasons": []}},
            "files": {"n_added": 5, "n_removed": 2, "n_modified": 1642, "renamed": ["a -> b"]}, "uncovered": ["z"]}
    f = report_figures(data)
    assert (f["to"], f["counts.changed"], f["files.modified"]) == ("0.33.0", "1", "1,642")
    assert (f["cited"], f["anchors"], f["anchors_broken"], f["pages"], f["pages_citing"]) == ("2", "3", "2", "1", "2")
    assert (f["files.renamed"], f["uncovered"]) == ("1", "1")
    assert (f["counts.changed.share"], f["anchors_broken.share"], f["anchors_broken.one_in"]) == ("50.0 %", "66.7 %", "2")
    assert f["files.removed_real"] == "1"

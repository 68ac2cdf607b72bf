"""``make impact``: every classification on the fixture releases 0.1.0 → 0.2.0."""

from __future__ import annotations

import json

import pytest
from sync_helpers import needs_ctags
from vllm_book.sync import __main__ as cli
from vllm_book.sync import impact

pytestmark = needs_ctags


@pytest.fixture
def report(book, cache):
    return impact.run(book, "0.2.0", jobs=1)


def by_subject(rep) -> dict[str, impact.Cited]:
    return {c.subject: c for c in rep.cited}


def test_candidate_release_is_downloaded_verified_and_unpacked(report, cache, index_server):
    tree = cache / "trees" / "vllm-0.2.0"
    record = json.loads((tree / ".vllm-book-provenance.json").read_text())
    assert record["sdist_sha256"] == index_server["sha256"]["0.2.0"] == report.to_sha256
    assert record["commit_abbrev"] == report.to_commit == "2222222bb"
    assert (tree / "vllm" / "core" / "hashing.py").is_file()
    assert (cache / "sdist" / "vllm-0.2.0.tar.gz").is_file()


def test_unchanged(report):
    c = by_subject(report)
    for subject in ("vllm/core/block_pool.py::BlockPool.free", "vllm/core/block_pool.py",
                    "csrc/cache_kernels.cu::copy_blocks", "vllm/core/block_pool.py::BlockPool"):
        assert c[subject].status == "unchanged", subject
        assert not c[subject].breaks


def test_body_changed_with_a_real_line_numbered_diff(report):
    x = by_subject(report)["vllm/core/scheduler.py::Scheduler.schedule"]
    assert x.status == "changed" and x.body_changed
    assert x.old == "vllm/core/scheduler.py:8-16" and x.new == "vllm/core/scheduler.py:8-16"
    assert x.detail == "body changed (+3 −3 lines)"
    assert x.diff[:2] == ["--- v0.1.0/vllm/core/scheduler.py", "+++ v0.2.0/vllm/core/scheduler.py"]
    assert x.diff[2].startswith("@@ -8,") and "+8," in x.diff[2]  # the file's own line numbers
    assert "-        token_budget = self.budget" in x.diff
    assert "+        token_budget = self.max_tokens" in x.diff
    # the quoted-line anchor into it breaks, the plain one does not
    anchors = {a.anchor: a for a in x.anchors}
    assert anchors["vllm/core/scheduler.py::Scheduler.schedule"].resolves
    broken = anchors['vllm/core/scheduler.py::Scheduler.schedule:"token_budget = self.budget"']
    assert not broken.resolves
    assert broken.error == ('no line of vllm/core/scheduler.py::Scheduler.schedule (lines 8-16) contains '
                            '"token_budget = self.budget"')
    c = by_subject(report)["csrc/cache_kernels.cu::reshape_and_cache"]
    assert c.status == "changed" and "-void reshape_and_cache(int* key, int* cache, int n) {" in c.diff


def test_moved_lines_in_the_same_file(report):
    x = by_subject(report)["vllm/core/scheduler.py::Scheduler.finish"]
    assert (x.status, x.body_changed) == ("moved", False)
    assert x.detail == "same text, lines 18-20 → 21-23"
    assert x.anchors[0].resolves and x.anchors[0].location == "vllm/core/scheduler.py:21-23"


def test_moved_to_another_file(report):
    x = by_subject(report)["vllm/core/utils.py::hash_block"]
    assert x.status == "moved" and x.new == "vllm/core/hashing.py:4-6" and x.detail == "now vllm/core/hashing.py"
    assert not x.anchors[0].resolves
    assert "vllm/core/hashing.py::hash_block" in x.anchors[0].suggestions


def test_moved_by_same_body_under_a_new_name(report):
    x = by_subject(report)["vllm/core/utils.py::cdiv"]
    assert x.status == "moved"
    assert x.detail == "now vllm/core/utils.py::ceil_div (renamed)" and not x.body_changed and not x.diff
    assert x.suggestions[0] == "vllm/core/utils.py::ceil_div"


def test_removed_with_candidates(report):
    x = by_subject(report)["vllm/core/legacy.py::LegacyEngine"]
    assert x.status == "removed"
    assert x.detail == "no LegacyEngine in v0.2.0 (and no file vllm/core/legacy.py)"
    assert not x.anchors[0].resolves and x.anchors[0].error == "no file vllm/core/legacy.py in the source tree"


def test_directory_and_pages(report):
    x = by_subject(report)["vllm/core/"]
    assert x.status == "changed" and x.detail == "1 file added, 1 removed, 2 modified (of 5)"
    assert set(report.pages) == {"index", "01-part/index", "01-part/01-sched", "01-part/02-cache", "01-part/04-blocks"}
    assert report.pages["01-part/04-blocks"]["reasons"] == []
    assert "cites vllm/core/utils.py::cdiv (moved + anchor breaks)" in report.pages["01-part/01-sched"]["reasons"]
    assert any("1 file changed in its source_areas (+0 −0 ~1)" in r for r in report.pages["01-part/01-sched"]["reasons"])
    assert report.pages["index"]["reasons"] == ["cites vllm/ (changed)"]


def test_source_areas_and_uncovered_files(report):
    areas = {a.path: a for a in report.areas}
    assert areas["01-part/01-sched"].modified == ["vllm/core/scheduler.py"]
    assert areas["01-part/02-cache"].modified == ["csrc/cache_kernels.cu"]
    assert areas["01-part/03-later"].removed == ["vllm/core/legacy.py"]
    assert areas["01-part/03-later"].modified == ["requirements/common.txt"]  # outside the index: hashed directly
    assert areas["01-part/04-blocks"].n_changed == 0
    assert report.files["added"] == ["vllm/core/hashing.py"]
    assert report.uncovered == ["vllm/__init__.py", "vllm/_version.py", "vllm/core/hashing.py", "vllm/core/utils.py"]


def test_counts_and_written_reports(report, book):
    assert report.counts() == {"unchanged": 4, "changed": 4, "moved": 3, "removed": 1, "unresolved": 0}
    md = (book / "docs" / "impact-0.1.0-to-0.2.0.md").read_text()
    assert md.startswith("# Impact report: vLLM v0.1.0 → v0.2.0")
    assert "- **12 cited source targets**: 4 unchanged, 4 changed, 3 moved, 1 removed." in md
    assert "| removed ⚠ breaks | `vllm/core/legacy.py::LegacyEngine` | vllm/core/legacy.py:4-6 | — |" in md
    assert "```diff" in md
    data = json.loads((book / "docs" / "impact-0.1.0-to-0.2.0.json").read_text())
    assert data["counts"] == report.counts() and data["to"]["commit_abbrev"] == "2222222bb"
    assert {c["subject"]: c["status"] for c in data["cited"]}["vllm/core/utils.py::cdiv"] == "moved"


def test_reports_are_deterministic_and_cli_writes_where_told(book, cache, capsys):
    out = book / "elsewhere" / "report.md"
    assert cli.main(["--root", str(book), "impact", "--to", "0.2.0", "--out", str(out), "--jobs", "1"]) == 0
    first = out.read_text(), out.with_suffix(".json").read_text()
    assert "12 cited targets (unchanged 4, changed 4, moved 3, removed 1); 4 anchors would break" in capsys.readouterr().out
    assert cli.main(["--root", str(book), "impact", "--to", "0.2.0", "--out", str(out), "--jobs", "1"]) == 0
    assert (out.read_text(), out.with_suffix(".json").read_text()) == first


def test_unknown_release_is_a_clear_error(book, cache, capsys):
    assert cli.main(["--root", str(book), "impact", "--to", "9.9.9"]) == 2
    assert "vllm-9.9.9.tar.gz is not listed on http://127.0.0.1:" in capsys.readouterr().err


def test_glob_semantics():
    r = impact.glob_regex
    assert r("vllm/v1/metrics/**").match("vllm/v1/metrics/a/b.py")
    assert not r("vllm/v1/metrics/**").match("vllm/v1/metrics.py")
    assert r("vllm/*.py").match("vllm/a.py") and not r("vllm/*.py").match("vllm/x/a.py")
    assert r("vllm/**/block_*.py").match("vllm/block_pool.py") and r("vllm/**/block_*.py").match("vllm/v1/core/block_pool.py")
    assert r("csrc/").match("csrc/x.cu")


def test_a_one_line_body_is_not_evidence_of_a_rename():
    """Two one-line fields with the same text once their names are taken out are unrelated (a real false rename)."""
    from vllm_book.sync import impact

    assert not impact._distinctive(["    max_loras: int = Field(default=1, ge=1)"])
    assert impact._distinctive(["def ceil_div(a, b):", "    return -(a // -b)"])
